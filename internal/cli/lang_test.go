package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	gm "github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/lang"
	"github.com/echomq/echomq/govern/langs"
	"github.com/echomq/echomq/internal/cli"
)

// toyLang is a fourth language, as a folder of its own would define it:
// its SDK is ROOT/sdk/lang, whose API is the file api.lines there, one
// "<feature>: <type>" per line; its record is that list sorted. Nothing
// else in the repository knows it: registering it (langs.Register) is the
// one list entry.
type toyLang struct{}

const toyFile = "api.lines"

func (toyLang) Name() string         { return "lang" }
func (toyLang) Title() string        { return "Lang" }
func (toyLang) RulePrefix() string   { return "LANG" }
func (toyLang) Dir() string          { return "sdk/lang" }
func (toyLang) RecordSuffix() string { return ".lang-api.txt" }
func (toyLang) FromManifest() bool   { return false }
func (toyLang) Target() string       { return "" }
func (toyLang) Purposes() (string, string) {
	return "Lang code stops working when a feature it uses is gone.", "Lang code stops working when a feature changes its type."
}

func (l toyLang) Present(root string) bool {
	_, err := os.Stat(filepath.Join(root, l.Dir(), toyFile))
	return err == nil
}

func (l toyLang) Read(_ context.Context, src lang.Source) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(src.Root, l.Dir(), toyFile))
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, lang.ErrAbsent)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (toyLang) Format(version string, lines []string) ([]byte, error) {
	return []byte("# " + version + "\n" + strings.Join(lines, "\n") + "\n"), nil
}

func (toyLang) Parse(data []byte) ([]string, map[string]int, error) {
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines, lang.LineNumbers(data), nil
}

func (toyLang) Compare(old, new []string) []apirecord.Break {
	byKey := map[string]string{}
	for _, l := range new {
		k, _, _ := strings.Cut(l, ": ")
		byKey[k] = l
	}
	var out []apirecord.Break
	for _, l := range old {
		k, _, _ := strings.Cut(l, ": ")
		switch n, ok := byKey[k]; {
		case !ok:
			out = append(out, apirecord.Break{Kind: apirecord.Removed, Where: k, Old: l})
		case n != l:
			out = append(out, apirecord.Break{Kind: apirecord.Changed, Where: k, Old: l, New: n})
		}
	}
	return out
}

func (toyLang) Explain(b apirecord.Break) (string, string) { return lang.ExplainLine("Lang", b) }

func (toyLang) Annotate(*gm.Manifest) ([]target.Annotation, error) { return nil, nil }

// A fourth language is one folder and one list entry: registered, its
// record is frozen by release, its breaks are check's findings under its
// own rules (at the recorded line), release refuses a version that breaks
// it, and its rules are rules like any other (the report's purposes,
// waivers) — with no other file of the repository touched.
func TestFourthLanguage(t *testing.T) {
	// Not parallel: it registers a language in the process-wide list,
	// which every other check of the package would then read.
	defer langs.Register(toyLang{})()
	root := t.TempDir()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "protocol.yaml")
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(file, string(data))
	scenarios, _ := filepath.Glob("../../conformance/scenarios/*.yaml")
	for _, f := range scenarios {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(root, "conformance", "scenarios", filepath.Base(f)), string(b))
	}
	api := filepath.Join(root, "sdk", "lang", toyFile)
	write(api, "queue push: (id, payload) -> bool\nconnect: (url) -> client\nqueue size: (set) -> int\n")

	code, out, errs := run(t, "release", "-root", root, "-manifest", file)
	if code != cli.ExitOK || !strings.Contains(out, ".lang-api.txt") {
		t.Fatalf("release with a fourth language = %d; want its record written\n%s%s", code, out, errs)
	}
	recs, _ := filepath.Glob(filepath.Join(root, "golden", "releases", "*.lang-api.txt"))
	if len(recs) != 1 {
		t.Fatalf("records of the fourth language: %v", recs)
	}
	if rec, _ := os.ReadFile(recs[0]); !strings.Contains(string(rec), "connect: (url) -> client\nqueue push: (id, payload) -> bool\n") {
		t.Errorf("%s is not the sorted list:\n%s", recs[0], rec)
	}
	if code, out, errs := run(t, "check", "-witness=off", "-root", root, "-manifest", file); code != cli.ExitOK || strings.Contains(errs, "records no Lang API") {
		t.Fatalf("check of the unchanged fourth language = %d\n%s%s", code, out, errs)
	}

	write(api, "queue push: (id, payload, delay) -> bool\nqueue size: (set) -> int\n")
	code, out, errs = run(t, "check", "-witness=off", "-root", root, "-manifest", file)
	if code != cli.ExitFindings {
		t.Fatalf("check after the fourth language's API broke = %d; want %d\n%s%s", code, cli.ExitFindings, out, errs)
	}
	for _, want := range []string{
		recs[0] + ":2:1: major LANG_API_NO_DELETE lang: connect: gone from the Lang SDK's public API (was: (url) -> client)",
		recs[0] + ":3:1: major LANG_API_SAME_SIGNATURE lang: queue push: was: (id, payload) -> bool; now: (id, payload, delay) -> bool",
		"required major",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ := run(t, "check", "-witness=off", "-root", root, "-manifest", file, "-format", "markdown"); !strings.Contains(out, "| major | `LANG_API_NO_DELETE` | `lang: connect` |") {
		t.Errorf("the markdown report does not list the fourth language's finding:\n%s", out)
	}
	i := slices.IndexFunc(compat.AllRules(), func(r compat.Rule) bool { return r.ID == "LANG_API_NO_DELETE" })
	if i < 0 || compat.AllRules()[i].Purpose != "Lang code stops working when a feature it uses is gone." {
		t.Errorf("the fourth language's rules are not rules: %v", compat.RuleIDs())
	}

	// A next version that breaks it is not frozen.
	cur, err := model.ParseSemver(between(string(data), "\nversion: ", "\n"))
	if err != nil {
		t.Fatal(err)
	}
	minor := model.Semver{Major: cur.Major, Minor: cur.Minor + 1}.String()
	next := strings.Replace(string(data), "\nversion: "+cur.String()+"\n", "\nversion: "+minor+"\n", 1)
	next = strings.Replace(next, "      status: current\n", "      status: released\n", 1)
	next = strings.TrimRight(next, "\n") + "\n    - version: " + minor + "\n      status: current\n      summary: The change under review.\n"
	write(file, next)
	code, out, errs = run(t, "release", "-witness=off", "-root", root, "-manifest", file)
	if code != cli.ExitFindings || !strings.Contains(out, "LANG_API_NO_DELETE lang: connect") || !strings.Contains(errs, "nothing was frozen") {
		t.Errorf("release of a version that breaks the fourth language = %d; want it refused naming LANG_API_NO_DELETE\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "golden", "releases", minor+".yaml")); err == nil {
		t.Error("a release that breaks the fourth language was frozen")
	}
}
