package targets_test

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets"
)

// TestRenameReachesEveryTarget renames a wire class word and a row field in
// a scratch copy of the manifest and checks that the change reaches the Go,
// TypeScript, Python (the out-of-process plugin the repository's
// emqgen.yaml declares), Lua and docs outputs together: every language's
// files stop spelling the old word and start spelling the new one. Nothing
// in a target may keep a protocol fact of its own.
func TestRenameReachesEveryTarget(t *testing.T) {
	src, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	field, ok := p.Field(model.RoleToken)
	if !ok {
		t.Fatal("the manifest has no token field")
	}
	word := p.Classes[0].Word
	renames := []struct{ old, new string }{
		{word, word + "RENAMED"},
		{field.Name, field.Name + "_renamed"},
	}
	edited := src
	for _, r := range renames {
		edited = regexp.MustCompile(`\b`+regexp.QuoteMeta(r.old)+`\b`).ReplaceAll(edited, []byte(r.new))
	}
	scratch := t.TempDir() + "/protocol.yaml"
	if err := os.WriteFile(scratch, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	q, err := model.Load(scratch)
	if err != nil {
		t.Fatalf("the renamed manifest does not resolve: %v", err)
	}
	// Every target gen runs: the in-process ones and the plugins of the
	// repository's emqgen.yaml (the Python target), run from the root.
	ts, err := targets.Configured("../..")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range ts {
		names = append(names, tg.Name())
	}
	if !slices.Contains(names, "python") {
		t.Fatalf("the repository's emqgen.yaml declares no python plugin; targets: %v", names)
	}
	before, err := targets.Generate(p, ts)
	if err != nil {
		t.Fatal(err)
	}
	after, err := targets.Generate(q, ts)
	if err != nil {
		t.Fatal(err)
	}
	// The files of each language, concatenated.
	lang := func(files []target.File, f func(string) bool) []byte {
		var b bytes.Buffer
		for _, file := range files {
			if f(file.Path) {
				b.Write(file.Data)
			}
		}
		return b.Bytes()
	}
	langs := map[string]func(string) bool{
		"go": func(p string) bool { return strings.HasPrefix(p, "sdk/go/") && strings.HasSuffix(p, ".go") },
		"ts": func(p string) bool { return strings.HasPrefix(p, "sdk/ts/") && strings.HasSuffix(p, ".ts") },
		"python": func(p string) bool {
			return strings.HasPrefix(p, "sdk/python/") && strings.HasSuffix(p, ".py")
		},
		"lua":  func(p string) bool { return strings.HasPrefix(p, "sdk/lua/") },
		"docs": func(p string) bool { return strings.HasPrefix(p, "docs/") },
	}
	for name, f := range langs {
		old, new := lang(before, f), lang(after, f)
		if len(old) == 0 {
			t.Errorf("%s: no files", name)
			continue
		}
		if bytes.Equal(old, new) {
			t.Errorf("%s: the renames changed nothing", name)
		}
		for _, r := range renames {
			if !bytes.Contains(old, []byte(r.old)) {
				t.Errorf("%s: %q does not appear in the outputs before the rename", name, r.old)
			}
			if !bytes.Contains(new, []byte(r.new)) {
				t.Errorf("%s: the renamed %q does not reach the outputs", name, r.new)
			}
			if n := regexp.MustCompile(`\b` + regexp.QuoteMeta(r.old) + `\b`).Find(new); n != nil {
				t.Errorf("%s: %q still appears after the rename", name, r.old)
			}
		}
	}
}
