package ts

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

func input(t *testing.T) *target.Input {
	t.Helper()
	p, err := model.Load(filepath.Join("..", "..", "..", "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	return &target.Input{Protocol: p, Bundle: b}
}

// TestGenerate checks what every generated module must be: under Dir,
// starting with the generated-file header, ending in one newline, without
// tabs or trailing blanks, no line wider than the print width except
// comments, strings and template literals, and the same bytes twice.
func TestGenerate(t *testing.T) {
	in := input(t)
	a, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 7 {
		t.Fatalf("%d files, want 7", len(a))
	}
	for i, f := range a {
		if f.Path != b[i].Path || !bytes.Equal(f.Data, b[i].Data) {
			t.Errorf("%s differs between two runs", f.Path)
		}
		if !strings.HasPrefix(f.Path, Dir+"/") || !strings.HasSuffix(f.Path, ".ts") {
			t.Errorf("%s is not a module under %s", f.Path, Dir)
		}
		if err := header.Check(f.Path, f.Data); err != nil {
			t.Error(err)
		}
		s := string(f.Data)
		if !strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\n\n") {
			t.Errorf("%s does not end in exactly one newline", f.Path)
		}
		for n, l := range strings.Split(s, "\n") {
			if strings.ContainsAny(l, "\t") || strings.TrimRight(l, " ") != l {
				t.Errorf("%s:%d has a tab or trailing blanks", f.Path, n+1)
			}
		}
	}
}

// TestScriptsCarryTheBundle checks that every script's source and SHA-1,
// and the digest, are the bundle's, in manifest order.
func TestScriptsCarryTheBundle(t *testing.T) {
	in := input(t)
	files, err := Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	var scripts string
	for _, f := range files {
		if strings.HasSuffix(f.Path, "/scripts.ts") {
			scripts = string(f.Data)
		}
	}
	if !strings.Contains(scripts, q(in.Bundle.Digest)) {
		t.Error("scripts.ts lacks the bundle digest")
	}
	last := -1
	for _, s := range in.Bundle.Scripts {
		i := strings.Index(scripts, "  sha1: "+q(s.SHA1)+",")
		if i < 0 || !strings.Contains(scripts, tmpl(s.Source)) {
			t.Errorf("script %s: its SHA-1 or source is missing", s.Name)
		}
		if i < last {
			t.Errorf("script %s is out of manifest order", s.Name)
		}
		last = i
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ in, constant, pascal, camel string }{
		{"run_at_ms", "RUN_AT_MS", "RunAtMs", "runAtMs"},
		{"complete_claim", "COMPLETE_CLAIM", "CompleteClaim", "completeClaim"},
		{"migration:<queue>", "MIGRATION_QUEUE", "MigrationQueue", "migrationQueue"},
		{"id", "ID", "Id", "id"},
	} {
		if got := constName(c.in); got != c.constant {
			t.Errorf("constName(%q) = %q, want %q", c.in, got, c.constant)
		}
		if got := pascal(c.in); got != c.pascal {
			t.Errorf("pascal(%q) = %q, want %q", c.in, got, c.pascal)
		}
		if got := camel(c.in); got != c.camel {
			t.Errorf("camel(%q) = %q, want %q", c.in, got, c.camel)
		}
	}
}

// TestQuote checks strings are quoted as prettier prints them.
func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		`plain`:       `"plain"`,
		`it's`:        `"it's"`,
		`say "hi"`:    `'say "hi"'`,
		`a\b`:         `"a\\b"`,
		"line\nbreak": `"line\nbreak"`,
		"—":           `"—"`,
	} {
		if got := q(in); got != want {
			t.Errorf("q(%q) = %s, want %s", in, got, want)
		}
	}
	if got := tmpl("a`b${c}\\"); got != "`a\\`b\\${c}\\\\`" {
		t.Errorf("tmpl = %s", got)
	}
}

// TestListBreaks checks the print-width rule lists follow.
func TestListBreaks(t *testing.T) {
	s := &src{}
	s.list("", "export const A = [", []string{`"x"`, `"y"`}, "] as const;")
	long := strings.Repeat("y", 70)
	s.list("", "export const B = [", []string{q(long), `"z"`}, "] as const;")
	want := "export const A = [\"x\", \"y\"] as const;\nexport const B = [\n  \"" + long + "\",\n  \"z\",\n] as const;\n"
	if got := s.b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
