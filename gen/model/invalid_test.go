package model

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/echomq/echomq/gen/manifest"
)

// update rewrites the goldens of testdata/invalid from what the model says
// today: go test ./gen/model -run TestInvalid -update
var update = flag.Bool("update", false, "rewrite the stderr.txt goldens under testdata/invalid")

// errLineRE is the shape of every line of a manifest error: a position, or
// for whole-file problems the file alone.
var errLineRE = regexp.MustCompile(`^protocol\.yaml(:\d+:\d+)?: \S`)

// TestInvalid runs the broken-manifest corpus: each folder under
// testdata/invalid holds a protocol.yaml with one targeted breakage (or a
// few, for the many-errors cases) and stderr.txt, exactly what the error's
// Error() prints for it.
func TestInvalid(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join("testdata", "invalid"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		n++
		dir := filepath.Join("testdata", "invalid", d.Name())
		t.Run(d.Name(), func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, "protocol.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse("protocol.yaml", data)
			if err == nil {
				t.Fatalf("the manifest loads (protocol %s); it must be refused", p.Version)
			}
			var me *manifest.Errors
			if !errors.As(err, &me) {
				t.Fatalf("error is %T, want *manifest.Errors: %v", err, err)
			}
			got := err.Error()
			if strings.TrimSpace(got) == "" {
				t.Fatal("the error prints nothing")
			}
			for _, line := range strings.Split(got, "\n") {
				if !errLineRE.MatchString(line) {
					t.Errorf("line %q is not protocol.yaml:line:col: message", line)
				}
			}
			golden := filepath.Join(dir, "stderr.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./gen/model -run TestInvalid -update to write it)", err)
			}
			if diff := cmp.Diff(strings.TrimRight(string(want), "\n"), got); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", golden, diff)
			}
		})
	}
	if n < 30 {
		t.Errorf("testdata/invalid holds %d cases; the corpus needs at least 30", n)
	}
}
