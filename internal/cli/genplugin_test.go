package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/plugin"
	"github.com/echomq/echomq/internal/cli"
)

// TestGenRequest prints the plugin request and the schemas: the request
// validates against request.schema.json, and -plugin fills in the
// plugin's out and options from emqgen.yaml.
func TestGenRequest(t *testing.T) {
	t.Parallel()
	code, out, errs := run(t, "gen", "-request", "-manifest", manifest)
	if code != cli.ExitOK {
		t.Fatalf("gen -request = %d\n%s", code, errs)
	}
	if err := plugin.ValidateRequest([]byte(out)); err != nil {
		t.Fatalf("gen -request printed a request that does not match the schema: %v", err)
	}
	root := t.TempDir()
	cfg := "version: 1\nplugins:\n  - {name: py, run: [python3, main.py], out: sdk/py, options: {package: echomq}}\n"
	if err := os.WriteFile(filepath.Join(root, plugin.ConfigFile), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, "gen", "-request", "-plugin", "py", "-manifest", manifest, "-root", root)
	if code != cli.ExitOK {
		t.Fatalf("gen -request -plugin py = %d\n%s", code, errs)
	}
	var req plugin.Request
	if err := json.Unmarshal([]byte(out), &req); err != nil {
		t.Fatal(err)
	}
	if req.Plugin.Name != "py" || req.Plugin.Out != "sdk/py" || req.Options["package"] != "echomq" {
		t.Errorf("plugin %+v, options %v; want py, sdk/py, package echomq", req.Plugin, req.Options)
	}
	if code, _, errs := run(t, "gen", "-request", "-plugin", "nope", "-manifest", manifest, "-root", root); code != cli.ExitUsage || !strings.Contains(errs, `declares no plugin "nope"`) {
		t.Errorf("gen -request -plugin nope = %d\n%s", code, errs)
	}
	for which, want := range map[string][]byte{"request": plugin.RequestSchemaJSON, "response": plugin.ResponseSchemaJSON} {
		if code, out, _ := run(t, "gen", "-schema", which); code != cli.ExitOK || !bytes.Equal([]byte(out), want) {
			t.Errorf("gen -schema %s = %d, printed %d bytes, want the %d of %s.schema.json", which, code, len(out), len(want), which)
		}
	}
	if code, _, _ := run(t, "gen", "-schema", "other"); code != cli.ExitUsage {
		t.Errorf("gen -schema other = %d, want %d", code, cli.ExitUsage)
	}
}

// TestGenPlugin declares the test plugin in a root's emqgen.yaml: gen
// writes its files beside the in-process targets', -check then passes, a
// hand edit of a plugin file is stale, and a broken emqgen.yaml is
// reported at its position.
func TestGenPlugin(t *testing.T) {
	t.Parallel()
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cfg := "version: 1\nplugins:\n  - name: echo\n    run: [go, -C, " + repo + ", run, ./gen/plugin/testdata/echo]\n    out: sdk/echo\n"
	if err := os.WriteFile(filepath.Join(root, plugin.ConfigFile), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := run(t, "gen", "-manifest", manifest, "-root", root); code != 0 || !strings.Contains(out, "wrote sdk/echo/constants.py") {
		t.Fatalf("gen = %d\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, "gen", "-check", "-manifest", manifest, "-root", root); code != 0 {
		t.Fatalf("gen -check after gen = %d\n%s%s", code, out, errs)
	}
	file := filepath.Join(root, "sdk/echo/constants.py")
	data, _ := os.ReadFile(file)
	if err := os.WriteFile(file, append(data, "# hand edit\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "gen", "-check", "-manifest", manifest, "-root", root); code != cli.ExitFindings || !strings.Contains(out, "-# hand edit") {
		t.Fatalf("gen -check after a hand edit = %d\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(root, plugin.ConfigFile), []byte("version: 1\nplugins:\n  - name: echo\n    out: sdk/echo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "gen", "-check", "-manifest", manifest, "-root", root); code != cli.ExitUsage || !strings.Contains(errs, "emqgen.yaml:3:5: plugin: missing field run") {
		t.Fatalf("gen with a broken emqgen.yaml = %d\n%s", code, errs)
	}
}
