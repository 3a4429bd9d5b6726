package plugin_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/plugin"
	"github.com/echomq/echomq/gen/target"
	"github.com/echomq/echomq/gen/targets"
	"github.com/echomq/echomq/gen/tree"
)

var (
	echoOnce sync.Once
	echoBin  string
	echoErr  error
)

// echo builds the test plugin (testdata/echo) once and returns its path.
func echo(t *testing.T) string {
	t.Helper()
	echoOnce.Do(func() {
		dir, err := os.MkdirTemp("", "emqgen-echo-")
		if err != nil {
			echoErr = err
			return
		}
		echoBin = filepath.Join(dir, "echo")
		out, err := exec.Command("go", "build", "-o", echoBin, "./testdata/echo").CombinedOutput()
		if err != nil {
			echoErr = &buildError{err, out}
		}
	})
	if echoErr != nil {
		t.Fatalf("building testdata/echo: %v", echoErr)
	}
	return echoBin
}

type buildError struct {
	err error
	out []byte
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + string(e.out) }

func TestMain(m *testing.M) {
	code := m.Run()
	if echoBin != "" {
		os.RemoveAll(filepath.Dir(echoBin))
	}
	os.Exit(code)
}

// spec is the echo plugin writing under sdk/echo with options.
func spec(t *testing.T, options map[string]any) plugin.Spec {
	return plugin.Spec{Name: "echo", Run: []string{echo(t)}, Out: "sdk/echo", Options: options, Dir: t.TempDir()}
}

// TestPluginFilesJoinTheOutput runs the echo plugin beside the in-process
// targets through the host and checks its files: under its out
// directory, rendered from the request, with their headers.
func TestPluginFilesJoinTheOutput(t *testing.T) {
	in := input(t, "../../protocol.yaml")
	ts := append(targets.All(), plugin.Target(spec(t, nil)))
	files, err := targets.Run(in, ts)
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for _, f := range files {
		byPath[f.Path] = string(f.Data)
	}
	inProcess, err := targets.Run(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(files), len(inProcess)+2; got != want {
		t.Errorf("%d files with the plugin, want %d (the in-process targets' %d and the plugin's 2)", got, want, len(inProcess))
	}
	consts, ok := byPath["sdk/echo/constants.py"]
	if !ok {
		t.Fatalf("no sdk/echo/constants.py among %d files", len(files))
	}
	if err := header.Check("sdk/echo/constants.py", []byte(consts)); err != nil {
		t.Error(err)
	}
	p, b := in.Protocol, in.Bundle
	for _, want := range []string{
		"VERSION_RECORD = \"" + p.VersionRecord() + "\"",
		"BUNDLE_DIGEST = \"" + b.Digest + "\"",
		"\"" + b.Scripts[0].Name + "\": \"" + b.Scripts[0].SHA1 + "\"",
		"\"" + p.Scripts[0].Name + "\": [\"" + p.KeyShape(p.Scripts[0].Keys[0]) + "\"",
	} {
		if !strings.Contains(consts, want) {
			t.Errorf("constants.py lacks %s:\n%s", want, consts)
		}
	}
	words := byPath["sdk/echo/classes/words.txt"]
	for _, c := range p.Classes {
		if !strings.Contains(words, c.Word+" "+c.Name+"\n") {
			t.Errorf("classes/words.txt lacks %s %s:\n%s", c.Word, c.Name, words)
		}
	}
}

// TestPluginDeterministic runs the plugin twice on the same input and
// compares the files byte for byte.
func TestPluginDeterministic(t *testing.T) {
	in := input(t, "../../protocol.yaml")
	tg := plugin.Target(spec(t, map[string]any{"module": "emq_constants"}))
	one, err := targets.Run(in, []target.Target{tg})
	if err != nil {
		t.Fatal(err)
	}
	two, err := targets.Run(in, []target.Target{tg})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(one, two) {
		t.Fatal("two runs of the plugin on the same input differ")
	}
	if one[1].Path != "sdk/echo/emq_constants.py" {
		t.Errorf("the module option did not reach the plugin: files %s, %s", one[0].Path, one[1].Path)
	}
}

// TestPluginRefusals makes the echo plugin misbehave and checks that the
// host refuses each misbehaviour with an error naming the plugin and what
// went wrong.
func TestPluginRefusals(t *testing.T) {
	in := input(t, "../../protocol.yaml")
	cases := []struct {
		mode    string
		timeout time.Duration
		want    []string
	}{
		{"noheader", 0, []string{"target echo", "sdk/echo/constants.py", header.Line("x.py")}},
		{"escape", 0, []string{"plugin echo", `"../escape.py"`, "inside the out directory"}},
		{"absolute", 0, []string{"plugin echo", `"/tmp/absolute.py"`, "relative"}},
		{"dup", 0, []string{"plugin echo", `"constants.py" is returned twice`}},
		{"fail", 0, []string{"plugin echo", "exit status 3", "stderr:\n  echo: failing on purpose"}},
		{"garbage", 0, []string{"plugin echo", "malformed response"}},
		{"errors", 0, []string{"plugin echo", "cannot render script widen: unsupported reply"}},
		{"slow", 300 * time.Millisecond, []string{"plugin echo", "timed out after 300ms"}},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			s := spec(t, map[string]any{"mode": c.mode})
			s.Timeout = c.timeout
			files, err := targets.Run(in, []target.Target{plugin.Target(s)})
			if err == nil {
				t.Fatalf("mode %s: no error; files %v", c.mode, files)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("mode %s: the error lacks %q:\n%v", c.mode, w, err)
				}
			}
		})
	}
	t.Run("missing program", func(t *testing.T) {
		s := spec(t, nil)
		s.Run = []string{filepath.Join(t.TempDir(), "no-such-plugin")}
		_, err := targets.Run(in, []target.Target{plugin.Target(s)})
		if err == nil || !strings.Contains(err.Error(), "plugin echo") {
			t.Fatalf("err = %v, want an error naming plugin echo", err)
		}
	})
}

// TestPluginTree writes the plugin's files into a tree, checks that the
// tree is then up to date, and that a file the plugin stops producing is
// removed while a hand-written file beside it stays.
func TestPluginTree(t *testing.T) {
	in := input(t, "../../protocol.yaml")
	root := t.TempDir()
	gen := func(module string) []target.File {
		t.Helper()
		s := spec(t, map[string]any{"module": module})
		files, err := targets.Run(in, []target.Target{plugin.Target(s)})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	files := gen("constants")
	changes, err := tree.Compare(root, files)
	if err != nil {
		t.Fatal(err)
	}
	if err := tree.Apply(root, changes); err != nil {
		t.Fatal(err)
	}
	hand := filepath.Join(root, "sdk", "echo", "helpers.py")
	if err := os.WriteFile(hand, []byte("def helper():\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changes, err := tree.Compare(root, files); err != nil || len(changes) != 0 {
		t.Fatalf("after writing, %d changes (%v), want none", len(changes), err)
	}
	changes, err = tree.Compare(root, gen("renamed"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		verb := "write"
		if c.New == nil {
			verb = "remove"
		}
		got = append(got, verb+" "+c.Path)
	}
	want := []string{"remove sdk/echo/constants.py", "write sdk/echo/renamed.py"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes = %v, want %v", got, want)
	}
}

// TestConfigured declares the echo plugin in an emqgen.yaml run with go
// run, as a repository would, and generates through targets.Configured.
func TestConfigured(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cfg := "version: 1\nplugins:\n  - name: echo\n    run: [go, -C, " + repo + ", run, ./gen/plugin/testdata/echo]\n    out: sdk/echo\n    options: {module: consts}\n"
	if err := os.WriteFile(filepath.Join(root, plugin.ConfigFile), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, err := targets.Configured(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(ts), len(targets.All())+1; got != want {
		t.Fatalf("%d targets, want %d", got, want)
	}
	files, err := targets.Run(input(t, "../../protocol.yaml"), ts)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range files {
		found = found || f.Path == "sdk/echo/consts.py"
	}
	if !found {
		t.Errorf("no sdk/echo/consts.py among the %d files", len(files))
	}

	clash := strings.Replace(cfg, "name: echo", "name: "+targets.All()[0].Name(), 1)
	if err := os.WriteFile(filepath.Join(root, plugin.ConfigFile), []byte(clash), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := targets.Configured(root); err == nil || !strings.Contains(err.Error(), "name of an in-process target") {
		t.Errorf("a plugin named like an in-process target: err = %v", err)
	}
	none, err := targets.Configured(t.TempDir())
	if err != nil || len(none) != len(targets.All()) {
		t.Errorf("without emqgen.yaml: %d targets, %v; want All", len(none), err)
	}
}

// TestParseConfig checks the decoding of emqgen.yaml and that each
// problem is reported at its position.
func TestParseConfig(t *testing.T) {
	good := `version: 1
plugins:
  - name: python
    run: [python3, gen/plugins/python/main.py]
    out: sdk/python
    timeout: 90s
    options:
      package: echomq
      typed: true
`
	specs, err := plugin.ParseConfig("emqgen.yaml", []byte(good), "/repo")
	if err != nil {
		t.Fatal(err)
	}
	want := []plugin.Spec{{
		Name: "python", Run: []string{"python3", "gen/plugins/python/main.py"}, Out: "sdk/python",
		Timeout: 90 * time.Second, Options: map[string]any{"package": "echomq", "typed": true}, Dir: "/repo",
	}}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("specs = %#v\nwant %#v", specs, want)
	}
	bad := []struct{ text, want string }{
		{"plugins: []\n", "emqgen.yaml:1:1: missing field version"},
		{"version: 2\nplugins: []\n", "emqgen.yaml:1:10: version must be 1"},
		{"version: 1\nplugin: []\n", `emqgen.yaml:2:1: unknown field "plugin"`},
		{"version: 1\nplugins:\n  - name: py\n    run: [python3]\n    out: ../elsewhere\n", `emqgen.yaml:5:10: out "../elsewhere" must be clean and inside the repository`},
		{"version: 1\nplugins:\n  - name: py\n    run: [python3]\n    out: /abs\n", `emqgen.yaml:5:10: out "/abs" must be relative`},
		{"version: 1\nplugins:\n  - name: py\n    out: sdk/py\n", "emqgen.yaml:3:5: plugin: missing field run"},
		{"version: 1\nplugins:\n  - name: py\n    run: []\n    out: sdk/py\n", "emqgen.yaml:4:10: run must be a non-empty list"},
		{"version: 1\nplugins:\n  - name: Py\n    run: [x]\n    out: sdk/py\n", "emqgen.yaml:3:11: plugin name must match"},
		{"version: 1\nplugins:\n  - name: py\n    run: [x]\n    out: sdk/py\n    env: {}\n", `emqgen.yaml:6:5: unknown field "env"`},
		{"version: 1\nplugins:\n  - name: py\n    run: [x]\n    out: sdk/py\n    timeout: soon\n", "emqgen.yaml:6:14: timeout must be a positive duration"},
		{"version: 1\nplugins:\n  - {name: py, run: [x], out: a}\n  - {name: py, run: [y], out: b}\n", `emqgen.yaml:4:5: plugin "py" is declared twice`},
		{"version: 1\nplugins:\n  - {name: py, run: [x], out: a, options: [1]}\n", "emqgen.yaml:3:43: options must be a mapping"},
	}
	for _, c := range bad {
		_, err := plugin.ParseConfig("emqgen.yaml", []byte(c.text), "/repo")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.text, err, c.want)
		}
	}
}

// TestResponseSchema checks that DecodeResponse refuses responses that do
// not match response.schema.json.
func TestResponseSchema(t *testing.T) {
	ok := `{"schema": "emqgen.plugin.response/v1", "files": [{"path": "a.py", "content": "x"}]}`
	if r, err := plugin.DecodeResponse([]byte(ok)); err != nil || len(r.Files) != 1 {
		t.Fatalf("a valid response: %v", err)
	}
	for _, bad := range []string{
		``,
		`[]`,
		`{"schema": "emqgen.plugin.response/v2", "files": []}`,
		`{"schema": "emqgen.plugin.response/v1"}`,
		`{"schema": "emqgen.plugin.response/v1", "files": [{"path": "a.py"}]}`,
		`{"schema": "emqgen.plugin.response/v1", "files": [], "extra": 1}`,
		`{"schema": "emqgen.plugin.response/v1", "files": [{"path": "", "content": ""}]}`,
	} {
		if _, err := plugin.DecodeResponse([]byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
	if !bytes.Contains(plugin.ResponseSchemaJSON, []byte(plugin.ResponseSchema)) {
		t.Error("response.schema.json does not name the response version")
	}
}

// TestPythonTwin runs the Python twin of the echo plugin
// (testdata/echo-py) and checks that it returns the same files, byte for
// byte, as the Go one: the request is all a plugin in any language needs.
func TestPythonTwin(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not installed (Debian: apt-get install python3): %v", err)
	}
	dir, err := filepath.Abs("testdata/echo-py/main.py")
	if err != nil {
		t.Fatal(err)
	}
	in := input(t, "../../protocol.yaml")
	opts := map[string]any{"module": "emq_constants"}
	goFiles, err := targets.Run(in, []target.Target{plugin.Target(spec(t, opts))})
	if err != nil {
		t.Fatal(err)
	}
	s := spec(t, opts)
	s.Run = []string{py, dir}
	pyFiles, err := targets.Run(in, []target.Target{plugin.Target(s)})
	if err != nil {
		t.Fatal(err)
	}
	if len(pyFiles) != len(goFiles) {
		t.Fatalf("python: %d files, go: %d", len(pyFiles), len(goFiles))
	}
	for i := range goFiles {
		if pyFiles[i].Path != goFiles[i].Path || !bytes.Equal(pyFiles[i].Data, goFiles[i].Data) {
			t.Errorf("python's %s differs from go's %s:\n%s\n---\n%s", pyFiles[i].Path, goFiles[i].Path, pyFiles[i].Data, goFiles[i].Data)
		}
	}
}

// TestRepositoryPluginsDeterministic runs every plugin the repository's
// emqgen.yaml declares, and the echo plugin, twice on protocol.yaml and
// compares their files byte for byte; each must also pass the host's
// checks.
func TestRepositoryPluginsDeterministic(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	specs, err := plugin.LoadConfig(repo)
	if err != nil {
		t.Fatal(err)
	}
	specs = append(specs, spec(t, nil))
	in := input(t, "../../protocol.yaml")
	for _, s := range specs {
		t.Run(s.Name, func(t *testing.T) {
			one, err := targets.Run(in, []target.Target{plugin.Target(s)})
			if err != nil {
				t.Fatal(err)
			}
			two, err := targets.Run(in, []target.Target{plugin.Target(s)})
			if err != nil {
				t.Fatal(err)
			}
			if len(one) == 0 {
				t.Fatalf("plugin %s returned no files", s.Name)
			}
			if !reflect.DeepEqual(one, two) {
				t.Fatalf("two runs of plugin %s on the same request differ", s.Name)
			}
		})
	}
}
