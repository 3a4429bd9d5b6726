package apirecord

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTSRecordRoundTrip(t *testing.T) {
	lines := []string{
		"@echomq/sdk function connect: (ConnectOptions?) => Promise<Client>",
		"@echomq/sdk class Queue method push: (string, Payload) => Promise<boolean>",
		"@echomq/sdk class Queue: class",
		"@echomq/sdk class Queue: class", // a duplicate is written once
	}
	var b bytes.Buffer
	if err := WriteTSAPI(&b, "2.2.0", lines); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), Header+"\n"+TSHeader+"\n# Version: 2.2.0\n") {
		t.Errorf("record starts %q", b.String())
	}
	got, err := ReadTSAPI(&b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{lines[1], lines[2], lines[0]}
	if !slices.Equal(got, want) {
		t.Errorf("read back %q; want %q", got, want)
	}
	if err := WriteTSAPI(&b, "2.2.0", []string{"no type here"}); err == nil {
		t.Error("a line without a type was written")
	}
	if _, err := ReadTSAPI(strings.NewReader(lines[1] + "\n" + lines[0] + "\n" + lines[2] + "\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a record out of order: %v; want an error at line 3", err)
	}
}

func TestCompareTSAPI(t *testing.T) {
	old := []string{
		"@echomq/sdk class Queue method purge: (string) => Promise<boolean>",
		"@echomq/sdk class Queue method push: (string, Payload) => Promise<boolean>",
		"@echomq/sdk function mint: () => string",
		"@echomq/sdk type SetName member \"dead\": literal",
		"@echomq/sdk class Queue method claim: (number) => Promise<Job | null>",
		"@echomq/sdk function open: (string) => void",
		"@echomq/sdk function run: (string, (a: number) => void) => void",
		"@echomq/sdk const Event: { readonly done: \"done\"; }",
		"@echomq/sdk const Mode: { readonly a: \"a\"; readonly b: \"b\"; }",
	}
	new := []string{
		// a vocabulary's const gaining a word: compatible
		"@echomq/sdk const Event: { readonly done: \"done\"; readonly gone: \"gone\"; }",
		// one losing or changing a member: a break
		"@echomq/sdk const Mode: { readonly a: \"a\"; readonly c: \"c\"; }",
		// trailing optional parameters added: compatible
		"@echomq/sdk class Queue method claim: (number, (Map<string, number>)?, boolean?) => Promise<Job | null>",
		"@echomq/sdk function run: (string, (a: number) => void, number?) => void",
		// a required one, or a rest parameter, added: a break
		"@echomq/sdk function open: (string, ...string[]) => void",
		"@echomq/sdk class Queue method push: (string, Payload, number) => Promise<boolean>",
		"@echomq/sdk function mint: () => string",
		"@echomq/sdk function mint: (Kind) => string", // an overload added
		"@echomq/sdk function connect: () => Promise<Client>",
	}
	var got []string
	for _, b := range CompareTSAPI(old, new) {
		got = append(got, b.Kind+" "+b.Where)
	}
	want := []string{
		"removed @echomq/sdk class Queue method purge",
		"changed @echomq/sdk class Queue method push",
		"changed @echomq/sdk const Mode",
		"changed @echomq/sdk function open",
		"removed @echomq/sdk type SetName member \"dead\"",
	}
	if !slices.Equal(got, want) {
		t.Errorf("breaks %q; want %q", got, want)
	}
	if bs := CompareTSAPI(old, old); len(bs) != 0 {
		t.Errorf("a record compared with itself: %v", bs)
	}
}

// Without node on PATH the TypeScript API cannot be read, and the error
// says what to install.
func TestTSAPINeedsNode(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := TSAPI(context.Background(), "../../sdk/ts")
	if !errors.Is(err, ErrNoNode) || !strings.Contains(err.Error(), "apt-get install nodejs") {
		t.Errorf("TSAPI without node: %v; want ErrNoNode with the install hint", err)
	}
}

// A relative package directory (as emqgen release passes "sdk/ts" from the
// repository root) reads the same API as an absolute one: the tool runs in
// the package's directory, so its path must not be relative to it.
func TestTSAPIRelativeDir(t *testing.T) {
	rel, err := TSAPI(context.Background(), "../../sdk/ts")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../../sdk/ts")
	if err != nil {
		t.Fatal(err)
	}
	want, err := TSAPI(context.Background(), abs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rel, want) || !slices.ContainsFunc(rel, func(l string) bool { return strings.Contains(l, "class Queue method push:") }) {
		t.Errorf("the API read from a relative dir (%d lines) differs from the absolute one's (%d) or lacks Queue.push", len(rel), len(want))
	}
}

// The API cache is keyed by the sources' content: an edit of any source
// file, or another directory, is another key, so a changed API is read
// anew.
func TestTSSourceKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "src", "gen"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(rel, text string) {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tsconfig.json", "{}")
	write(filepath.Join("src", "a.ts"), "export const a = 1;\n")
	write(filepath.Join("src", "gen", "b.ts"), "export const b = 2;\n")
	k1, err := tsSourceKey("node", dir)
	if err != nil {
		t.Fatal(err)
	}
	if k2, _ := tsSourceKey("node", dir); k2 != k1 {
		t.Fatal("the same sources give two keys")
	}
	write(filepath.Join("src", "gen", "b.ts"), "export const b = 3;\n")
	k3, _ := tsSourceKey("node", dir)
	write("tsconfig.json", `{"strict": true}`)
	k4, _ := tsSourceKey("node", dir)
	other := t.TempDir()
	if err := os.CopyFS(other, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	k5, _ := tsSourceKey("node", other)
	if k3 == k1 || k4 == k3 || k5 == k4 {
		t.Errorf("keys %s %s %s %s: an edit of a source, of tsconfig.json, or another directory must change the key", k1[:8], k3[:8], k4[:8], k5[:8])
	}
}

// Features gone from one entry point that others export unchanged are one
// Moved break per move, naming every name moved; a feature whose type
// changed on the way, or that no other entry point exports, is no move.
func TestCompareTSAPIMoved(t *testing.T) {
	old := []string{
		"@echomq/sdk class QueueKeys constructor: (string) => new",
		"@echomq/sdk class QueueKeys method row: (string) => string",
		"@echomq/sdk class QueueKeys: class",
		"@echomq/sdk const VERSION: string",
		"@echomq/sdk const WIDTH: number",
		"@echomq/sdk function connect: () => Promise<Client>",
		"@echomq/sdk function internal: () => void",
		"@echomq/sdk type Kind: = union of literals",
		"@echomq/sdk/gen class QueueKeys: class",
	}
	new := []string{
		"@echomq/sdk function connect: () => Promise<Client>",
		"@echomq/sdk/gen class QueueKeys: class",
		"@echomq/sdk/wire class QueueKeys constructor: (string) => new",
		"@echomq/sdk/wire class QueueKeys method row: (string) => string",
		"@echomq/sdk/wire class QueueKeys: class",
		"@echomq/sdk/wire const VERSION: string",
		"@echomq/sdk/wire const WIDTH: bigint",
		"@echomq/sdk/wire type Kind: = union of literals",
	}
	bs := CompareTSAPI(old, new)
	var got []string
	for _, b := range bs {
		got = append(got, b.Kind+" "+b.Where)
	}
	want := []string{
		"removed @echomq/sdk const WIDTH",
		"removed @echomq/sdk function internal",
		"moved @echomq/sdk moved to @echomq/sdk/gen and @echomq/sdk/wire",
		"moved @echomq/sdk moved to @echomq/sdk/wire",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("breaks %q; want %q", got, want)
	}
	for _, b := range bs {
		switch b.Where {
		case "@echomq/sdk moved to @echomq/sdk/wire":
			if b.Old != "@echomq/sdk class QueueKeys constructor: (string) => new" {
				t.Errorf("the move is at %q; want its first line", b.Old)
			}
			if !strings.HasPrefix(b.Message, "3 exported names (4 features)") || !strings.HasSuffix(b.Message, "imports them from there: Kind, QueueKeys, VERSION") {
				t.Errorf("message %q does not name every name moved", b.Message)
			}
		case "@echomq/sdk moved to @echomq/sdk/gen and @echomq/sdk/wire":
			if !strings.HasPrefix(b.Message, "1 exported name (1 feature) is gone") || !strings.HasSuffix(b.Message, "imports them from there: QueueKeys") {
				t.Errorf("message %q", b.Message)
			}
		}
	}
}
