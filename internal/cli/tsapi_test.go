package cli_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/internal/cli"
)

// scratchTS copies the TypeScript SDK's sources (package.json,
// tsconfig.json, src, tools; its node_modules linked), the manifest and
// the conformance scenarios into a scratch repository root. It fails with the install hint when node or
// the SDK's dependencies are missing.
func scratchTS(t *testing.T) (root string) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: the TypeScript API gate runs tsc under node (Node 20 or later: apt-get install nodejs npm; ./test.sh installs it)")
	}
	src := filepath.Join("..", "..", "sdk", "ts")
	if _, err := os.Stat(filepath.Join(src, "node_modules", "typescript")); err != nil {
		t.Fatal("sdk/ts has no node_modules/typescript: run (cd sdk/ts && npm ci); ./test.sh does")
	}
	root = t.TempDir()
	dst := filepath.Join(root, "sdk", "ts")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"package.json", "tsconfig.json", "src", "tools"} {
		from := filepath.Join(src, name)
		err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	abs, err := filepath.Abs(filepath.Join(src, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(dst, "node_modules")); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "protocol.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// A release keeps the conformance scenarios as its witness.
	scen := filepath.Join(root, "conformance", "scenarios")
	if err := os.MkdirAll(scen, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "conformance", "scenarios", "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scen, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), old); n != 1 {
		t.Fatalf("%s: %q occurs %d times, want once", path, old, n)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// emqgen release records the TypeScript SDK's public API beside the frozen
// release, and check then compares the tree's sdk/ts with it: an exported
// function removed and a class method's signature changed in a scratch
// copy fail the gate with TS_API_NO_DELETE and TS_API_SAME_SIGNATURE.
func TestCheckTypeScriptAPI(t *testing.T) {
	t.Parallel()
	root := scratchTS(t)
	file := filepath.Join(root, "protocol.yaml")
	code, out, errs := run(t, "release", "-root", root, "-manifest", file)
	if code != cli.ExitOK || !strings.Contains(out, ".ts-api.txt") {
		t.Fatalf("release = %d; want it to write the TypeScript record:\n%s%s", code, out, errs)
	}
	recs, _ := filepath.Glob(filepath.Join(root, "golden", "releases", "*.ts-api.txt"))
	if len(recs) != 1 {
		t.Fatalf("TypeScript records: %v; want one", recs)
	}
	rec, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"@echomq/sdk function exponentialBackoff: (number, number) => (attempt: number) => number\n",
		"@echomq/sdk class Queue method purge: (string, CallOptions?) => Promise<boolean>\n",
		"@echomq/sdk function connect: (ConnectOptions?) => Promise<Client>\n",
		"@echomq/sdk/gen class StaleError: class extends WireError\n",
	} {
		if !strings.Contains(string(rec), want) {
			t.Errorf("%s lacks %q", recs[0], want)
		}
	}
	// Releasing again writes nothing, the TypeScript record included.
	if code, out, errs := run(t, "release", "-root", root, "-manifest", file); code != cli.ExitOK || !strings.Contains(out, "nothing written") {
		t.Errorf("release again = %d:\n%s%s", code, out, errs)
	}

	ts := filepath.Join(root, "sdk", "ts", "src")
	editFile(t, filepath.Join(ts, "index.ts"), "  exponentialBackoff,\n", "")
	editFile(t, filepath.Join(ts, "queue.ts"), "async size(s: SetName, opts?: CallOptions): Promise<number> {", "async size(s: SetName, why: string, opts?: CallOptions): Promise<number> {")
	// The behavioural witness is another test's business (it needs a
	// server); this one is about the TypeScript API.
	code, out, errs = run(t, "check", "-root", root, "-manifest", file, "-witness=off")
	if code != cli.ExitFindings {
		t.Fatalf("check after the TypeScript API broke = %d; want %d:\n%s%s", code, cli.ExitFindings, out, errs)
	}
	for _, want := range []string{
		"major TS_API_NO_DELETE ts: @echomq/sdk function exponentialBackoff: gone from the TypeScript SDK's public API",
		"major TS_API_SAME_SIGNATURE ts: @echomq/sdk class Queue method size: was: (SetName, CallOptions?) => Promise<number>; now: (SetName, string, CallOptions?) => Promise<number>",
		".ts-api.txt:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errs, "records no TypeScript API") {
		t.Errorf("check said the baseline has no TypeScript record:\n%s", errs)
	}
	// The release named by its file brings the records beside it too.
	base := strings.TrimSuffix(recs[0], ".ts-api.txt") + ".yaml"
	code, byFile, errs := run(t, "check", "-root", root, "-manifest", file, "-witness=off", "-base", base)
	if code != cli.ExitFindings || !strings.Contains(byFile, "major TS_API_NO_DELETE ts: @echomq/sdk function exponentialBackoff") || strings.Contains(errs, "records no TypeScript API") {
		t.Errorf("check -base %s = %d; want the TypeScript findings from the record beside it:\n%s%s", base, code, byFile, errs)
	}
}
