package literalscan

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq/conformance/runner"
	"github.com/echomq/echomq/gen/model"
)

// TestTypeScriptSDK scans the hand-written TypeScript SDK (sdk/ts/src,
// outside the generated src/gen) for protocol literals in any of the
// language's quotes: every fact the manifest holds comes from src/gen. The
// conformance testee (src/conformance) is scanned too, allowing the
// contract's own words (runner.ContractWords), as the Go testee's scan does.
func TestTypeScriptSDK(t *testing.T) {
	root := filepath.Join("..", "..")
	p, err := model.Load(filepath.Join(root, "protocol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(root, "sdk", "ts", "src")
	var files []string
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "gen" || d.Name() == "conformance") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".ts") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d hand-written TypeScript files under %s", len(files), src)
	}
	quotes := []string{`"`, `'`, "`"}
	ScanQuotes(t, Literals(p), files, quotes, "use the name exported by sdk/ts/src/gen")
	lits := slices.DeleteFunc(Literals(p), func(l string) bool { return slices.Contains(runner.ContractWords, l) })
	ScanQuotes(t, lits, []string{filepath.Join(src, "conformance", "testee.ts")}, quotes, "use the name exported by the SDK")
}
