package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/manifest"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b", "c")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := manifest.Find(deep); !errors.Is(err, manifest.ErrNotFound) || !strings.Contains(err.Error(), "-manifest FILE") {
		// A protocol.yaml above the temp dir would be found; none is expected on a test machine.
		t.Fatalf("Find without a manifest: %v; want ErrNotFound with the hint", err)
	}
	// A directory named protocol.yaml is not a manifest.
	if err := os.Mkdir(filepath.Join(root, "a", "b", manifest.FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	top := filepath.Join(root, manifest.FileName)
	if err := os.WriteFile(top, []byte("protocol: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := manifest.Find(deep); err != nil || got != top {
		t.Errorf("Find(%s) = %q, %v; want %s", deep, got, err, top)
	}
	mid := filepath.Join(root, "a", manifest.FileName)
	if err := os.WriteFile(mid, []byte("protocol: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := manifest.Find(deep); err != nil || got != mid {
		t.Errorf("Find(%s) = %q, %v; want the nearest, %s", deep, got, err, mid)
	}
	if got, err := manifest.Find(root); err != nil || got != top {
		t.Errorf("Find(%s) = %q, %v; want %s", root, got, err, top)
	}
}
