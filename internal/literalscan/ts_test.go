package literalscan

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
)

// TestTypeScriptSDK scans the hand-written TypeScript SDK (sdk/ts/src,
// outside the generated src/gen) for protocol literals in any of the
// language's quotes: every fact the manifest holds comes from src/gen.
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
		if d.IsDir() && d.Name() == "gen" {
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
	ScanQuotes(t, Literals(p), files, []string{`"`, `'`, "`"}, "use the name exported by sdk/ts/src/gen")
}
