// Package golden compares what a test produces with an expected file
// committed beside it, and rewrites that file when the test runs with
// -update. A mismatch names the file, the command that rewrites it, and a
// plain unified diff (no colours, whatever the terminal).
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hexops/gotextdiff"
	"github.com/hexops/gotextdiff/myers"
	"github.com/hexops/gotextdiff/span"
)

// Update is the -update flag of every test binary that imports golden:
// when set, Check writes the expected files instead of comparing them.
var Update = flag.Bool("update", false, "rewrite the golden files with what the tests produce")

// Diff returns the unified diff that turns want into got, with the file
// labelled a/name and b/name; it is empty when they are equal.
func Diff(name string, want, got []byte) string {
	if bytes.Equal(want, got) {
		return ""
	}
	edits := myers.ComputeEdits(span.URIFromPath(name), string(want), string(got))
	return fmt.Sprint(gotextdiff.ToUnified("a/"+name, "b/"+name, string(want), edits))
}

// Check compares got with the file at path (shown as name in messages)
// and fails t on a difference, printing the diff from the file to got and
// cmd, the command that rewrites the file. With -update it writes got to
// path instead, creating its directory.
func Check(t testing.TB, path, name string, got []byte, cmd string) {
	t.Helper()
	if *Update {
		Write(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		t.Errorf("%s is missing; write it with: %s", name, cmd)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(name, want, got); d != "" {
		t.Errorf("%s differs from the output (-want +got); if the change is intended, review it and run: %s\n%s", name, cmd, d)
	}
}

// Write writes data to path, creating its directory, unless the file
// already holds exactly data.
func Write(t testing.TB, path string, data []byte) {
	t.Helper()
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
