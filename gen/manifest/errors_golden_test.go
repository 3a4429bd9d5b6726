package manifest_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/manifest"
)

var updateErrors = flag.Bool("update-errors", false, "rewrite the want section of every error golden (testdata/errors)")

// errorsBase is the manifest every error golden edits: a frozen release,
// so that the positions never drift with the working manifest.
const errorsBase = "../../golden/releases/2.2.0.yaml"

// Every error golden (testdata/errors/<case>.txt: a # comment saying what
// it shows, one edit of errorsBase, and the errors it must produce with
// their excerpts) decodes to exactly its errors: a YAML mistake at the
// line it is on, an unknown field with the field it likely means, a list
// entry named by its name.
func TestErrorGoldens(t *testing.T) {
	base, err := os.ReadFile(errorsBase)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/errors/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no error goldens: %v", err)
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			head, want, ok := strings.Cut(text, "-- want --\n")
			if !ok || !strings.HasPrefix(head, "# ") {
				t.Fatalf("%s: want a # comment, an -- edit -- section and a -- want -- section", path)
			}
			_, edit, _ := strings.Cut(head, "-- edit --\n<<<<<<<\n")
			old, rest, ok1 := strings.Cut(edit, "=======\n")
			new, _, ok2 := strings.Cut(rest, ">>>>>>>\n")
			if !ok1 || !ok2 || strings.Count(string(base), old) != 1 {
				t.Fatalf("%s: the edit's old text must occur exactly once in %s", path, errorsBase)
			}
			src := []byte(strings.Replace(string(base), old, new, 1))
			_, err = manifest.Parse("protocol.yaml", src)
			var es *manifest.Errors
			if !errors.As(err, &es) {
				t.Fatalf("%s: Parse = %v; want *manifest.Errors", path, err)
			}
			got := es.Excerpt(src) + "\n"
			if *updateErrors {
				if err := os.WriteFile(path, []byte(head+"-- want --\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s: errors differ (go test ./gen/manifest -run TestErrorGoldens -update-errors rewrites them):\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}
