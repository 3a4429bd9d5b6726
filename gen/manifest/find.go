package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// FileName is the manifest's file name, which Find looks for.
const FileName = "protocol.yaml"

// ErrNotFound is the error Find returns when no directory from the start
// up to the file system's root holds a manifest.
var ErrNotFound = errors.New("no " + FileName + " found")

// Find looks for protocol.yaml in dir and then in each parent directory,
// as the go command looks for go.mod, and returns the path of the first
// one found. When there is none its error wraps ErrNotFound and says how
// to name a manifest instead.
func Find(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; {
		path := filepath.Join(d, FileName)
		st, err := os.Stat(path)
		if err == nil && !st.IsDir() {
			return path, nil
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%w in %s or any of its parent directories; run emqgen inside a repository that has one, or name the manifest (-manifest FILE, or validate FILE)", ErrNotFound, abs)
		}
		d = parent
	}
}
