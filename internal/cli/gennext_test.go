package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/govern/release"
)

// TestGenSaysWhatToDoNext: after gen wrote something it names the next
// steps, by where the manifest's version stands against the newest frozen
// release of the root: none yet, the same version, a version to freeze, or
// one below the newest; a gen that changed nothing says nothing more.
func TestGenSaysWhatToDoNext(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	frozen, err := os.ReadFile(newestRelease(t))
	if err != nil {
		t.Fatal(err)
	}
	version := strings.TrimSuffix(filepath.Base(newestRelease(t)), ".yaml")
	withRelease := func(t *testing.T) string {
		root := t.TempDir()
		dir := filepath.Join(root, "golden", "releases")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, version+".yaml"), frozen, 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	gen := func(t *testing.T, root, body string) string {
		t.Helper()
		file := filepath.Join(root, "protocol.yaml")
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := run(t, "gen", "-manifest", file, "-root", root)
		if code != 0 {
			t.Fatalf("gen = %d\n%s%s", code, out, errs)
		}
		return out
	}
	// A major bump: the newest entry released, one for 99.0.0 current (the
	// history closes the manifest).
	bumped := strings.Replace(string(data), "version: "+version+"\n", "version: 99.0.0\n", 1)
	bumped = strings.Replace(bumped, "status: current", "status: released", 1)
	bumped = strings.TrimRight(bumped, "\n") + "\n    - version: 99.0.0\n      status: current\n      summary: A major for the test.\n"
	for name, tc := range map[string]struct {
		root func(*testing.T) string
		body string
		want string
	}{
		"no release":   {root: func(t *testing.T) string { return t.TempDir() }, body: string(data), want: "freeze the first release with: go run ./cmd/emqgen release"},
		"same version": {root: withRelease, body: string(data), want: "go run ./cmd/emqgen check (against the frozen " + version},
		"to freeze":    {root: withRelease, body: bumped, want: "then freeze 99.0.0 with: go run ./cmd/emqgen release"},
	} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			root := tc.root(t)
			out := gen(t, root, tc.body)
			if !strings.Contains(out, "next: ") || !strings.Contains(out, tc.want) {
				t.Errorf("gen printed:\n%s\nwant a next step with %q", out, tc.want)
			}
			if again := gen(t, root, tc.body); strings.Contains(again, "next: ") {
				t.Errorf("a gen that changed nothing still printed next steps:\n%s", again)
			}
		})
	}
}

// newestRelease is the path of the repository's newest frozen manifest.
func newestRelease(t *testing.T) string {
	t.Helper()
	r, err := release.Newest("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r.Manifest
}
