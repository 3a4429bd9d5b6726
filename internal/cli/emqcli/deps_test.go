package emqcli_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/internal/literalscan"
)

const module = "github.com/echomq/echomq/"

// deps is `go list -deps` of pkg (relative to the repository root): every
// package it is built from, test files aside, with its standard flag.
func deps(t *testing.T, pkg string) (own, std []string) {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "list", "-deps", "-f", "{{.Standard}} {{.ImportPath}}", "./"+pkg)
	cmd.Dir = "../../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		isStd, path, _ := strings.Cut(l, " ")
		if isStd == "true" {
			std = append(std, path)
		} else {
			own = append(own, path)
		}
	}
	return own, std
}

// TestEmqIsBuiltOnTheSDKAlone: cmd/emq imports the standard library,
// rueidis and the SDK (sdk/go/...), its own glue and the flag habits it
// shares with emqgen (internal/cmdflag), and the dashboard module (itself
// on the SDK alone);
// never the generator (gen/...), governance (govern/...) or anything else
// of emqgen's.
func TestEmqIsBuiltOnTheSDKAlone(t *testing.T) {
	own, _ := deps(t, "cmd/emq")
	allowed := []string{module + "cmd/emq", module + "internal/cli/emqcli", module + "internal/cmdflag", module + "dashboard"}
	sdk := false
	for _, d := range own {
		switch {
		case strings.HasPrefix(d, module+"sdk/go/"):
			sdk = sdk || d == module+"sdk/go/emq"
		case strings.HasPrefix(d, "github.com/redis/rueidis"), slices.Contains(allowed, d):
		case strings.HasPrefix(d, "golang.org/x/"), strings.HasPrefix(d, "vendor/"):
			// what rueidis and the standard library use
		default:
			t.Errorf("emq imports %s; it may use only the SDK, rueidis and the standard library", d)
		}
		for _, bad := range []string{module + "gen/", module + "govern/"} {
			if strings.HasPrefix(d, bad) {
				t.Errorf("emq imports the generator's %s", d)
			}
		}
	}
	if !sdk {
		t.Errorf("emq does not use the SDK (%semq):\n%s", module+"sdk/go/", strings.Join(own, "\n"))
	}
}

// TestEmqgenDoesNotImportTheSDKRuntime: emqgen imports no SDK runtime
// (sdk/go/emq, the probe interpreter) and not emq's command glue. Its one
// live work is the behavioural witness, which runs the conformance runner
// in process (conformance/runner: a Redis client to plant and read keys,
// and sdk/go/redistest to start the scratch server) so that an installed
// emqgen gates any checkout; the scripts themselves run only in the
// testee, on the SDK generated from the manifest under review.
func TestEmqgenDoesNotImportTheSDKRuntime(t *testing.T) {
	own, _ := deps(t, "cmd/emqgen")
	if !slices.Contains(own, module+"gen/model") || !slices.Contains(own, module+"conformance/runner") {
		t.Fatalf("the dependency list of emqgen lacks gen/model or conformance/runner:\n%s", strings.Join(own, "\n"))
	}
	for _, d := range own {
		if strings.HasPrefix(d, module+"sdk/") && d != module+"sdk/go/redistest" || d == module+"internal/cli/emqcli" {
			t.Errorf("emqgen imports %s", d)
		}
	}
}

// TestNoProtocolLiterals scans emq's hand-written code (its command glue,
// the shared flag helpers and main) for literals the manifest holds: class
// words, field and state names, key prefixes, kinds, reserve members, the
// version. Everything comes from the SDK's generated names.
func TestNoProtocolLiterals(t *testing.T) {
	p, err := model.Load("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.go")
	kit, _ := filepath.Glob("../../cmdflag/*.go")
	files = append(append(files, kit...), "../../../cmd/emq/main.go")
	if len(files) < 6 {
		t.Fatalf("scanning only %v", files)
	}
	literalscan.Scan(t, literalscan.Literals(p), files, "use the SDK's generated name")
}

func TestText(t *testing.T) {
	for in, ok := range map[string]bool{
		"":                true,
		"order 1234":      true,
		"2 × widget ✓ 日本": true,
		"a\nb":            false,
		"a\tb":            false,
		"\x1b[31mred":     false,
		"\x7f":            false,
		"\u0085":          false,
		"abc\u202edcba":   false,
		"\u2066x\u2069":   false,
		"\xff\xfe":        false,
		"a\x00b":          false,
	} {
		s, got := emqcli.Text([]byte(in))
		if got != ok || (ok && s != in) {
			t.Errorf("Text(%q) = %q, %v; want ok %v", in, s, got, ok)
		}
	}
}

// TestUsage: emq -h lists its commands on stdout; no arguments and an
// unknown command exit 2.
func TestUsage(t *testing.T) {
	code, out, _ := run(t, "-h")
	if code != emqcli.ExitOK || !strings.Contains(out, "inspect") || !strings.Contains(out, "probe") || !strings.Contains(out, "Usage: emq <command>") {
		t.Errorf("emq -h = %d\n%s", code, out)
	}
	if code, _, _ := run(t); code != emqcli.ExitUsage {
		t.Errorf("emq without a command = %d", code)
	}
	if code, _, errs := run(t, "gen"); code != emqcli.ExitUsage || !strings.Contains(errs, `emq: unknown command "gen"`) {
		t.Errorf("emq gen = %d\n%s", code, errs)
	}
}

// TestHelpOnStdout: every command's -h prints its usage on stdout, nothing
// on stderr, and exits 0, wherever -h stands; a bad flag prints the problem
// and the usage on stderr and exits 2. Flags may follow the arguments.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{
		{"probe", "-h"}, {"probe", "-claim", "-h"}, {"inspect", "sizes", "-h"}, {"inspect", "sizes", "-queue", "q", "-h"},
		{"inspect", "browse", "-h"}, {"inspect", "show", "JOB0NgWEfAEJfs", "-h"}, {"inspect", "revive", "--help"}, {"inspect", "purge", "-help"},
	} {
		code, out, errs := run(t, args...)
		want := "Usage: emq " + args[0]
		if args[0] == "inspect" {
			want += " " + args[1]
		}
		if code != emqcli.ExitOK || errs != "" || !strings.HasPrefix(out, want) || !strings.Contains(out, "Flags:") {
			t.Errorf("emq %s = %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
		}
	}
	for _, args := range [][]string{{"probe", "-nope"}, {"inspect", "sizes", "-queue"}, {"inspect", "show", "-raw=maybe"}} {
		code, out, errs := run(t, args...)
		want := "Usage: emq " + args[0]
		if code != emqcli.ExitUsage || out != "" || !strings.Contains(errs, want) {
			t.Errorf("emq %s = %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
		}
	}
	if code, _, errs := run(t, "prob"); code != emqcli.ExitUsage || !strings.Contains(errs, `unknown command "prob"; did you mean probe?`) {
		t.Errorf("emq prob = %d; want a suggestion\n%s", code, errs)
	}
}
