package literalscan

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq/conformance/runner"
	"github.com/echomq/echomq/gen/model"
)

// TestPythonSDK scans the hand-written Python SDK (sdk/python/src/echomq,
// outside the generated _gen) for protocol literals in either of the
// language's quotes: every fact the manifest holds comes from echomq._gen.
func TestPythonSDK(t *testing.T) {
	root := filepath.Join("..", "..")
	p, err := model.Load(filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "sdk", "python", "src", "echomq")
	var files []string
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "_gen" || d.Name() == "__pycache__") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".py") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 4 {
		t.Fatalf("found only %d hand-written Python files under %s", len(files), src)
	}
	ScanPython(t, Literals(p), files, "use the name exported by echomq._gen")
}

// TestScanPythonFindsLiterals plants literals in a scratch file: quoted
// ones are found in either quote, in code and docstrings; a # comment and
// a longer word are not.
func TestScanPythonFindsLiterals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.py")
	src := strings.Join([]string{
		`a = "pending"`,            // 1: found
		`b = 'emq:{' + q`,          // 2: found (starts a string)
		`c = x  # "pending" here`,  // comment: not found
		`d = "pendings"`,           // a longer word: not found
		`"""The "state" field."""`, // 5: found (docstring)
		`e = "#" + 'active'`,       // 6: found after a quoted #
	}, "\n")
	if err := writeFile(file, src); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{TB: t}
	ScanPython(rec, []string{"pending", "emq:{", "state", "active"}, []string{file}, "hint")
	want := []string{":1 ", ":2 ", ":5 ", ":6 "}
	if len(rec.errs) != len(want) {
		t.Fatalf("got %d findings, want %d: %q", len(rec.errs), len(want), rec.errs)
	}
	for i, w := range want {
		if !strings.Contains(rec.errs[i], w) {
			t.Errorf("finding %d is %q, want line %s", i, rec.errs[i], w)
		}
	}
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o644) }

// recorder keeps the errors a scan reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Helper() {}

// TestPythonTestee scans the Python SDK's conformance testee
// (sdk/python/conformance) for protocol literals: it takes every protocol
// fact from package echomq; only the contract's own words (which equal
// manifest names today) are allowed.
func TestPythonTestee(t *testing.T) {
	root := filepath.Join("..", "..")
	p, err := model.Load(filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "sdk", "python", "conformance", "*.py"))
	if len(files) == 0 {
		t.Fatal("found no Python testee under sdk/python/conformance")
	}
	lits := slices.DeleteFunc(Literals(p), func(l string) bool { return slices.Contains(runner.ContractWords, l) })
	ScanPython(t, lits, files, "take it from package echomq")
}
