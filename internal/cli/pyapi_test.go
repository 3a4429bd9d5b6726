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

// scratchPy makes a scratch repository root with the manifest, the
// conformance scenarios (a release's witness) and the Python package in
// src copied to sdk/python/src/echomq. It fails with the install hint
// when python3 is missing.
func scratchPy(t *testing.T, src string) (root string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not on PATH: the Python API gate parses sdk/python with it (apt-get install python3; ./test.sh installs it)")
	}
	root = t.TempDir()
	copyTree(t, src, filepath.Join(root, "sdk", "python", "src", "echomq"), func(rel string) bool {
		return !strings.Contains(rel, "__pycache__")
	})
	copyTree(t, filepath.Join("..", "..", "conformance", "scenarios"), filepath.Join(root, "conformance", "scenarios"), func(rel string) bool {
		return strings.HasSuffix(rel, ".yaml") || rel == "."
	})
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "protocol.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// copyTree copies the files under from that keep accepts to to.
func copyTree(t *testing.T, from, to string, keep func(rel string) bool) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			if !keep(rel) && rel != "." {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		if !keep(rel) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// emqgen release records the Python SDK's public API beside the frozen
// release, and check then compares the tree's sdk/python with it: a
// public function removed, a method given a required parameter and a
// parameter renamed fail the gate with PY_API_NO_DELETE and
// PY_API_SAME_SIGNATURE; a parameter added with a default passes.
func TestCheckPythonAPI(t *testing.T) {
	t.Parallel()
	root := scratchPy(t, filepath.Join("..", "..", "govern", "apirecord", "testdata", "pyapi", "echomq"))
	file := filepath.Join(root, "protocol.yaml")
	code, out, errs := run(t, "release", "-root", root, "-manifest", file)
	if code != cli.ExitOK || !strings.Contains(out, ".py-api.txt") {
		t.Fatalf("release = %d; want it to write the Python record:\n%s%s", code, out, errs)
	}
	recs, _ := filepath.Glob(filepath.Join(root, "golden", "releases", "*.py-api.txt"))
	if len(recs) != 1 {
		t.Fatalf("Python records: %v; want one", recs)
	}
	rec, err := os.ReadFile(recs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"echomq function connect: async (url: str = ..., *, timeout: float | None = ..., **options: object) -> Client\n",
		"echomq class Queue method push: async (id: str, payload: bytes | str, /) -> bool\n",
		"echomq.gen class StaleError: class(WireError)\n",
	} {
		if !strings.Contains(string(rec), want) {
			t.Errorf("%s lacks %q", recs[0], want)
		}
	}
	// Releasing again writes nothing, the Python record included.
	if code, out, errs := run(t, "release", "-root", root, "-manifest", file); code != cli.ExitOK || !strings.Contains(out, "nothing written") {
		t.Errorf("release again = %d:\n%s%s", code, out, errs)
	}
	// Unchanged, the gate passes and says nothing about Python.
	if code, out, errs := run(t, "check", "-root", root, "-manifest", file, "-witness=off"); code != cli.ExitOK || strings.Contains(errs, "records no Python API") {
		t.Fatalf("check of the unchanged tree = %d:\n%s%s", code, out, errs)
	}

	pkg := filepath.Join(root, "sdk", "python", "src", "echomq")
	// compatible: a keyword-only parameter with a default
	editFile(t, filepath.Join(pkg, "_client.py"), "timeout: float | None = None,", "timeout: float | None = None, retries: int = 3,")
	if code, out, errs := run(t, "check", "-root", root, "-manifest", file, "-witness=off"); code != cli.ExitOK {
		t.Fatalf("check after a parameter with a default was added = %d; want a pass:\n%s%s", code, out, errs)
	}
	editFile(t, filepath.Join(pkg, "__init__.py"), `"connect", `, "")
	editFile(t, filepath.Join(pkg, "queue.py"), "async def push_batch(self, jobs: list[tuple[str, bytes]])", "async def push_batch(self, jobs: list[tuple[str, bytes]], delay: int)")
	editFile(t, filepath.Join(pkg, "queue.py"), "def __init__(self, client: object, name: str)", "def __init__(self, client: object, queue: str)")
	code, out, errs = run(t, "check", "-root", root, "-manifest", file, "-witness=off")
	if code != cli.ExitFindings {
		t.Fatalf("check after the Python API broke = %d; want %d:\n%s%s", code, cli.ExitFindings, out, errs)
	}
	for _, want := range []string{
		"major PY_API_NO_DELETE py: echomq function connect: gone from the Python SDK's public API",
		"major PY_API_SAME_SIGNATURE py: echomq class Queue method push_batch: was: async (jobs: list[tuple[str, bytes]]) -> list[bool]; now: async (jobs: list[tuple[str, bytes]], delay: int) -> list[bool]",
		"major PY_API_SAME_SIGNATURE py: echomq.queue class Queue constructor: was: (client: object, name: str) -> None; now: (client: object, queue: str) -> None",
		".py-api.txt:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
	// The package gone while the baseline records an API: check refuses.
	if err := os.RemoveAll(filepath.Join(root, "sdk", "python")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "check", "-root", root, "-manifest", file, "-witness=off"); code != cli.ExitUsage || !strings.Contains(errs, "has no Python SDK to compare it with") {
		t.Errorf("check without sdk/python against a Python record = %d; want %d:\n%s%s", code, cli.ExitUsage, out, errs)
	}
}

// A release frozen without a Python SDK records no Python API (release
// says so), and check against it, once the package exists, compares
// nothing for Python and says so.
func TestCheckNotesNoPythonRecord(t *testing.T) {
	t.Parallel()
	root := scratchPy(t, filepath.Join("..", "..", "govern", "apirecord", "testdata", "pyapi", "echomq"))
	pkg := filepath.Join(root, "sdk", "python")
	hidden := filepath.Join(root, "python-later")
	if err := os.Rename(pkg, hidden); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "protocol.yaml")
	code, out, errs := run(t, "release", "-root", root, "-manifest", file)
	if code != cli.ExitOK || strings.Contains(out, ".py-api.txt") || !strings.Contains(errs, "has no Python SDK: no Python API recorded") {
		t.Fatalf("release without sdk/python = %d:\n%s%s", code, out, errs)
	}
	if err := os.Rename(hidden, pkg); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "check", "-root", root, "-manifest", file, "-witness=off")
	if code != cli.ExitOK {
		t.Fatalf("check = %d:\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, ".py-api.txt) records no Python API, so the Python SDK's API is not compared") {
		t.Errorf("check did not note the missing Python record:\n%s", errs)
	}
}
