package cli_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/echomq/echomq/govern/release"
	"github.com/echomq/echomq/internal/cli"
)

const manifest = "../../protocol.yaml"

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if code, out, errs := run(t, "validate", manifest); code != 0 || !strings.Contains(out, "valid") {
		t.Fatalf("validate of the real manifest = %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(data), "class: EMQSTALE, message: complete token mismatch", "class: EMQGONE, message: complete token mismatch", 1)
	broken = strings.Replace(broken, "version: 2.0.0\n", "version: two\n", 1)
	file := filepath.Join(t.TempDir(), "protocol.yaml")
	if err := os.WriteFile(file, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "validate", file)
	if code != cli.ExitFindings {
		t.Fatalf("validate of a broken manifest exited %d; want %d", code, cli.ExitFindings)
	}
	lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
	if len(lines) < 6 {
		t.Fatalf("want every error, got:\n%s", errs)
	}
	// Each problem is FILE:LINE:COL: message, then the source line and a
	// caret under the column, both indented.
	pos := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `:(\d+):(\d+): `)
	src := strings.Split(broken, "\n")
	for i := 0; i < len(lines); i += 3 {
		m := pos.FindStringSubmatch(lines[i])
		if m == nil || i+2 >= len(lines) {
			t.Errorf("line %q does not start FILE:LINE:COL: or has no excerpt under it", lines[i])
			continue
		}
		var line, col int
		fmt.Sscan(m[1], &line)
		fmt.Sscan(m[2], &col)
		if lines[i+1] != "    "+src[line-1] {
			t.Errorf("under %q: %q is not source line %d", lines[i], lines[i+1], line)
		}
		if lines[i+2] != "    "+strings.Repeat(" ", col-1)+"^" {
			t.Errorf("under %q: the caret line %q is not under column %d", lines[i], lines[i+2], col)
		}
	}
	if !strings.Contains(errs, `"EMQGONE", which is not declared (declared: EMQKIND, EMQSTALE, EMQPOLICY)`) || !strings.Contains(errs, `"two" is not a version`) {
		t.Errorf("messages do not say what is wrong:\n%s", errs)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	if code, out, _ := run(t, "-h"); code != 0 || !strings.Contains(out, "validate") {
		t.Errorf("-h = %d\n%s", code, out)
	}
	if code, _, errs := run(t, "frobnicate"); code != cli.ExitUsage || !strings.Contains(errs, "unknown command") || strings.Contains(errs, "did you mean") {
		t.Errorf("an unknown command = %d\n%s", code, errs)
	}
	for typo, want := range map[string]string{"chekc": "check", "valdiate": "validate", "gne": "gen", "rel": "release", "dif": "diff"} {
		if code, _, errs := run(t, typo); code != cli.ExitUsage || !strings.Contains(errs, `unknown command "`+typo+`"; did you mean `+want+"?") {
			t.Errorf("%s = %d; want a suggestion of %s\n%s", typo, code, want, errs)
		}
	}
	if code, _, _ := run(t, "gen", "-nope"); code != cli.ExitUsage {
		t.Errorf("a bad flag = %d; want %d", code, cli.ExitUsage)
	}
	// The live commands moved to emq (cmd/emq), which is built on the SDK.
	for _, moved := range []string{"inspect", "probe"} {
		if code, out, errs := run(t, moved, "-h"); code != cli.ExitUsage || !strings.Contains(errs, "unknown command") {
			t.Errorf("emqgen %s = %d; want it gone\n%s%s", moved, code, out, errs)
		}
	}
	if _, out, _ := run(t, "-h"); !strings.Contains(out, "emq") || strings.Contains(out, "  inspect ") || strings.Contains(out, "  probe ") {
		t.Errorf("emqgen -h still lists a live command, or does not point to emq:\n%s", out)
	}
}

// TestHelpOnStdout: every command's -h prints its usage on stdout, nothing
// on stderr, and exits 0, wherever -h stands; a bad flag prints the problem
// and the usage on stderr and exits 2.
func TestHelpOnStdout(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"gen", "-h"}, {"gen", "-check", "-h"}, {"validate", "-h"}, {"validate", "protocol.yaml", "-h"},
		{"check", "-h"}, {"diff", "a.yaml", "b.yaml", "-h"}, {"diff", "--help"}, {"release", "-help"},
	} { // probe -h and inspect SUB -h moved to emq (internal/cli/emqcli, TestHelpOnStdout)
		code, out, errs := run(t, args...)
		if code != cli.ExitOK || errs != "" || !strings.HasPrefix(out, "Usage: emqgen "+args[0]) || !strings.Contains(out, "Flags:") && args[0] != "validate" {
			t.Errorf("emqgen %s = %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
		}
	}
	if code, out, errs := run(t, "gen", "-h"); code != 0 || !strings.Contains(out, "-check") {
		t.Errorf("gen -h = %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{{"gen", "-nope"}, {"diff", "a", "b", "-format"}, {"check", "-manifest"}} {
		code, out, errs := run(t, args...)
		if code != cli.ExitUsage || out != "" || !strings.Contains(errs, "Usage: emqgen "+args[0]) {
			t.Errorf("emqgen %s = %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
		}
	}
}

// TestFlagsAfterArguments: every command takes its flags before, between
// or after its positional arguments.
func TestFlagsAfterArguments(t *testing.T) {
	t.Parallel()
	old, new := "../../golden/releases/2.0.0.yaml", "../../golden/releases/2.1.0.yaml"
	_, want, _ := run(t, "diff", "-format", "json", old, new)
	for _, args := range [][]string{
		{"diff", old, new, "-format", "json"},
		{"diff", old, "-format=json", new},
	} {
		code, out, errs := run(t, args...)
		if code != cli.ExitOK || out != want || !strings.HasPrefix(out, "{") {
			t.Errorf("emqgen %s = %d (the JSON report: %v)\n%s", strings.Join(args, " "), code, out == want, errs)
		}
	}
	if code, out, errs := run(t, "validate", manifest, "-h"); code != 0 || !strings.Contains(out, "Usage: emqgen validate") {
		t.Errorf("validate FILE -h = %d\n%s%s", code, out, errs)
	}
	root := t.TempDir()
	if code, out, errs := run(t, "gen", "-manifest", manifest, "-root", root); code != 0 {
		t.Fatalf("gen = %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "gen", "-root", root, "-manifest", manifest, "-check"); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("gen ... -check = %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, "gen", "extra", "-check"); code != cli.ExitUsage || !strings.Contains(errs, "gen takes no arguments") {
		t.Errorf("gen extra -check = %d\n%s", code, errs)
	}
	if code, _, errs := run(t, "check", "-witness=off", "-manifest", manifest, "-root", "../..", "stray", "-format", "json"); code != cli.ExitUsage || !strings.Contains(errs, `check takes no arguments (got "stray")`) {
		t.Errorf("check with a stray argument = %d\n%s", code, errs)
	}
	// "--" ends the flags: what follows is a file, even when it looks like a flag.
	if code, _, errs := run(t, "validate", "--", "-format"); code != cli.ExitUsage || !strings.Contains(errs, "-format") {
		t.Errorf("validate -- -format = %d\n%s", code, errs)
	}
}

// TestGenCheck regenerates into an empty root: -check first reports every
// file missing, gen writes them, -check then passes; a hand edit and a
// leftover generated file make it fail again with a diff.
func TestGenCheck(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	code, out, _ := run(t, "gen", "-check", "-manifest", manifest, "-root", root)
	if code != cli.ExitFindings || !strings.Contains(out, "+++ b/sdk/lua/enqueue.lua") {
		t.Fatalf("gen -check on an empty root = %d\n%.400s", code, out)
	}
	if code, out, errs := run(t, "gen", "-manifest", manifest, "-root", root); code != 0 {
		t.Fatalf("gen = %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "gen", "-check", "-manifest", manifest, "-root", root); code != 0 {
		t.Fatalf("gen -check after gen = %d\n%s%s", code, out, errs)
	}
	lua := filepath.Join(root, "sdk/lua/claim.lua")
	data, _ := os.ReadFile(lua)
	if err := os.WriteFile(lua, append(data, "-- hand edit\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, "sdk/lua/gone.lua")
	if err := os.WriteFile(stale, []byte("-- Code generated by emqgen. DO NOT EDIT.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = run(t, "gen", "-check", "-manifest", manifest, "-root", root)
	if code != cli.ExitFindings || !strings.Contains(out, "-- hand edit") || !strings.Contains(out, "--- a/sdk/lua/gone.lua") {
		t.Fatalf("gen -check after a hand edit = %d\n%s", code, out)
	}
	if code, _, _ := run(t, "gen", "-manifest", manifest, "-root", root); code != 0 {
		t.Fatal("gen failed")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("gen left a generated file the manifest no longer produces")
	}
}

// TestRenameReachesEveryTarget changes a class word and a field name in the
// manifest and regenerates: the Go, the Lua, the docs and the Python (the
// repository's Python plugin, declared in the scratch root's emqgen.yaml)
// all change, and the old spellings are gone from every generated file.
func TestRenameReachesEveryTarget(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(data), "EMQSTALE", "EMQFENCED")
	s = strings.Replace(s, "    - name: attempts\n      role: token", "    - name: tries\n      role: token", 1)
	dir := t.TempDir()
	file := filepath.Join(dir, "protocol.yaml")
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "out")
	plugin, err := filepath.Abs("../../gen/plugins/python/main.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "version: 1\nplugins:\n  - name: python\n    run: [python3, " + strconv.Quote(plugin) + "]\n    out: sdk/python\n    options:\n      package: src/echomq/_gen\n"
	if err := os.WriteFile(filepath.Join(root, "emqgen.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "gen", "-manifest", file, "-root", root); code != 0 {
		t.Fatalf("gen = %d\n%s%s", code, out, errs)
	}
	for _, path := range []string{"sdk/go/emq/wire/errors_gen.go", "sdk/go/emq/wire/protocol_gen.go", "sdk/lua/complete.lua", "docs/protocol.md",
		"sdk/python/src/echomq/_gen/errors.py", "sdk/python/src/echomq/_gen/protocol.py"} {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "EMQSTALE") {
			t.Errorf("%s still says EMQSTALE", path)
		}
		if !strings.Contains(string(b), "EMQFENCED") && !strings.Contains(string(b), `"tries"`) {
			t.Errorf("%s shows neither the new class word nor the new field", path)
		}
	}
	lua, _ := os.ReadFile(filepath.Join(root, "sdk/lua/claim.lua"))
	if !strings.Contains(string(lua), "'tries'") || strings.Contains(string(lua), "'attempts'") {
		t.Errorf("claim.lua does not use the renamed field:\n%s", lua)
	}
	proto, _ := os.ReadFile(filepath.Join(root, "sdk/go/emq/wire/protocol_gen.go"))
	if !strings.Contains(string(proto), `FieldToken = "tries"`) {
		t.Error(`protocol_gen.go lacks FieldToken = "tries"`)
	}
	py, _ := os.ReadFile(filepath.Join(root, "sdk/python/src/echomq/_gen/protocol.py"))
	if !strings.Contains(string(py), `FIELD_TOKEN: Final = "tries"`) || strings.Contains(string(py), `"attempts"`) {
		t.Error(`the Python protocol.py lacks FIELD_TOKEN: Final = "tries" or still names "attempts"`)
	}
	pyErrs, _ := os.ReadFile(filepath.Join(root, "sdk/python/src/echomq/_gen/errors.py"))
	if !strings.Contains(string(pyErrs), `CLASS_STALE: Final = "EMQFENCED"`) {
		t.Error(`the Python errors.py lacks CLASS_STALE: Final = "EMQFENCED"`)
	}
}

// TestManifestFoundByWalkingUp: without -manifest or FILE, every command
// uses the protocol.yaml of the working directory or its nearest parent
// (like go.mod), writes under that directory, and says how to name one
// when there is none.
func TestManifestFoundByWalkingUp(t *testing.T) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "protocol.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(repo, "golden", "releases"), os.DirFS(filepath.Join(abs, "golden", "releases"))); err != nil {
		t.Fatal(err)
	}
	// The scratch repository has no hand-written SDKs, whose API a frozen
	// release of the manifest's own version records: its check compares
	// against the release before (what a branch of main would do anyway).
	if cur, err := release.Newest(abs); err == nil && cur.Version.String() == between(string(data), "\nversion: ", "\n") {
		old, _ := filepath.Glob(filepath.Join(repo, "golden", "releases", cur.Version.String()+".*"))
		for _, f := range old {
			if err := os.RemoveAll(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	sub := filepath.Join(repo, "sdk", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	if code, out, errs := run(t, "validate"); code != 0 || !strings.HasPrefix(out, filepath.Join("..", "..", "protocol.yaml")+": valid") {
		t.Errorf("validate in a subdirectory = %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "gen"); code != 0 || !strings.Contains(out, "wrote sdk/lua/enqueue.lua") {
		t.Fatalf("gen in a subdirectory = %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(repo, "sdk", "lua", "enqueue.lua")); err != nil {
		t.Errorf("gen did not write under the manifest's directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sub, "sdk")); !os.IsNotExist(err) {
		t.Errorf("gen wrote under the working directory (%v)", err)
	}
	if code, out, errs := run(t, "gen", "-check"); code != 0 || !strings.Contains(out, "up to date") {
		t.Errorf("gen -check in a subdirectory = %d\n%s%s", code, out, errs)
	}
	// -category wire: the scratch repository has no hand-written SDKs to
	// compare the releases' API records with; the wire is what this
	// compares, against the baseline found by walking up.
	if code, out, errs := run(t, "check", "-witness=off", "-category", "wire"); code != 0 || !strings.Contains(out, "→") {
		t.Errorf("check in a subdirectory (baseline from the manifest's golden/releases) = %d\n%s%s", code, out, errs)
	}
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"validate"}, {"gen"}, {"check"}, {"release"}} {
		code, out, errs := run(t, args...)
		if code != cli.ExitUsage || out != "" || !strings.Contains(errs, "no protocol.yaml found in") || !strings.Contains(errs, "-manifest FILE") {
			t.Errorf("%s without a manifest anywhere = %d\n%s%s", args[0], code, out, errs)
		}
	}
}

// TestValidateReportsEverySection: a shape error in one section no longer
// hides the semantic errors of the others, and the sections that refer to
// a broken one report nothing false about it.
func TestValidateReportsEverySection(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, edit := range [][2]string{
		{"    - {name: dead, class: queue, redis: zset,", "    - {name: dead, class: queue, redis: [zset],"},    // keys: a shape error
		{"  examples: [orders, emails.v2, a, 0-retry_queue]", "  examples: [orders, Emails, a, 0-retry_queue]"}, // queues: semantic
		{"    - bump: patch", "    - bump: fix"}, // governance: semantic
	} {
		if !strings.Contains(s, edit[0]) {
			t.Fatalf("the manifest has no %q", edit[0])
		}
		s = strings.Replace(s, edit[0], edit[1], 1)
	}
	file := filepath.Join(t.TempDir(), "protocol.yaml")
	if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, "validate", file)
	if code != cli.ExitFindings {
		t.Fatalf("validate = %d\n%s", code, errs)
	}
	for _, want := range []string{
		"manifest.keys.types[dead].redis must be a string, found a sequence",
		`queue example "Emails" does not match queues.pattern`,
		`rule bump "fix" is not one of patch, minor, major`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("validate does not report %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, `set "dead"`) || strings.Contains(errs, "not a declared key type") {
		t.Errorf("a broken key type cascades into sets or scripts:\n%s", errs)
	}
}

// TestValidateSyntaxErrorAtItsOpener: an unclosed quote is reported on its
// own line and column, with the line and a caret, not where YAML gave up.
func TestValidateSyntaxErrorAtItsOpener(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), `    pattern: "[A-Z]{3}"`, `    pattern: "[A-Z]{3}`, 1)
	file := filepath.Join(t.TempDir(), "protocol.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	line := 1 + strings.Count(src[:strings.Index(src, `pattern: "[A-Z]{3}`)], "\n")
	code, _, errs := run(t, "validate", file)
	want := fmt.Sprintf("%s:%d:14: YAML syntax: did not find expected key (the double-quoted string that begins here is not closed on its line)\n"+
		"        pattern: \"[A-Z]{3}\n"+
		"                 ^\n", file, line)
	if code != cli.ExitFindings || errs != want {
		t.Errorf("validate = %d\n%s\nwant:\n%s", code, errs, want)
	}
}
