package apirecord

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// needPython fails the test, with the install hint, when python3 is missing.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not on PATH: " + pyHint)
	}
}

// The recorder reads the fixture package (testdata/pyapi/echomq, in the
// shape of the Python SDK) statically: re-exports resolved to their
// definitions, __all__ (with another module's __all__ added) deciding
// what a module exports, private modules and names left out, literals
// recorded by type, parameter names and kinds kept.
func TestPyAPIFixture(t *testing.T) {
	needPython(t)
	got, err := PyAPI(context.Background(), "testdata/pyapi/echomq")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/pyapi/want.txt")
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(got, "\n") + "\n"; g != string(want) {
		if os.Getenv("UPDATE_PYAPI") != "" {
			if err := os.WriteFile("testdata/pyapi/want.txt", []byte(g), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Errorf("PyAPI(testdata/pyapi/echomq) =\n%s\nwant (testdata/pyapi/want.txt; UPDATE_PYAPI=1 rewrites it)\n%s", g, want)
	}
	for _, l := range got {
		for _, private := range []string{"_client", "_helper", "_PRIVATE", "unlisted", "_redis", "Sequence", "annotations"} {
			if strings.Contains(l, private) {
				t.Errorf("a private or unexported name is recorded: %q", l)
			}
		}
	}
	// Twice the same bytes: the record is deterministic.
	again, err := PyAPI(context.Background(), "testdata/pyapi/echomq")
	if err != nil || !slices.Equal(got, again) {
		t.Errorf("a second read differs: %v", err)
	}
}

// A name in __all__ that the module does not define, and a syntax error,
// fail with the file named; a directory without __init__.py is refused.
func TestPyAPIRefusesBrokenPackages(t *testing.T) {
	needPython(t)
	for name, c := range map[string]struct{ src, want string }{
		"undefined": {"__all__ = [\"Missing\"]\n", "Missing is exported (in __all__) but not defined"},
		"syntax":    {"def broken(:\n", "__init__.py:1:"},
		"dynamic":   {"__all__ = sorted(globals())\n", "only list or tuple literals"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "echomq")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "__init__.py"), []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := PyAPI(context.Background(), dir); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("PyAPI = %v; want an error with %q", err, c.want)
			}
		})
	}
	if _, err := PyAPI(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "no __init__.py") {
		t.Errorf("PyAPI of a plain directory: %v", err)
	}
}

func TestPyRecordRoundTrip(t *testing.T) {
	lines := []string{
		"echomq function connect: async (url: str = ...) -> Client",
		"echomq class Queue method push: async (id: str, payload: bytes) -> bool",
		"echomq class Queue: class",
		"echomq class Queue: class", // a duplicate is written once
	}
	var b bytes.Buffer
	if err := WritePyAPI(&b, "2.2.0", lines); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), Header+"\n"+PyHeader+"\n# Version: 2.2.0\n") {
		t.Errorf("record starts %q", b.String())
	}
	got, err := ReadPyAPI(&b)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{lines[1], lines[2], lines[0]}; !slices.Equal(got, want) {
		t.Errorf("read back %q; want %q", got, want)
	}
	if err := WritePyAPI(&b, "2.2.0", []string{"no type here"}); err == nil {
		t.Error("a line without a type was written")
	}
	if _, err := ReadPyAPI(strings.NewReader(lines[1] + "\n" + lines[0] + "\n" + lines[2] + "\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a record out of order: %v; want an error at line 3", err)
	}
}

func TestComparePyAPI(t *testing.T) {
	old := []string{
		"echomq class Queue method purge: async (name: str) -> bool",
		"echomq class Queue method push: async (id: str, payload: bytes) -> bool",
		"echomq class Queue method claim: async (n: int) -> list[Job]",
		"echomq class Queue method size: async (state: str) -> int",
		"echomq class Worker constructor: (queue: Queue, handler: Handler, *, concurrency: int = ...) -> None",
		"echomq function connect: async (url: str = ..., **options: object) -> Client",
		"echomq function mint: () -> str",
		"echomq function run: (*args: str) -> None",
		"echomq function keyed: (a: int, b: int) -> None",
		"echomq class State member DONE: 'd'",
		"echomq const VERSION: str",
	}
	new := []string{
		// parameters with defaults added after the old ones, keyword-only
		// ones anywhere: compatible
		"echomq class Queue method claim: async (n: int, block: float = ..., *, signal: Event | None = ...) -> list[Job]",
		"echomq class Worker constructor: (queue: Queue, handler: Handler, *, logger: Logger | None = ..., concurrency: int = ...) -> None",
		"echomq function connect: async (url: str = ..., *, timeout: float = ..., **options: object) -> Client",
		// a required parameter added, a parameter renamed, made
		// positional-only, *args dropped, async-ness or the return changed: breaks
		"echomq class Queue method push: async (id: str, payload: bytes, delay: int) -> bool",
		"echomq class Queue method size: async (set: str) -> int",
		"echomq function keyed: (a: int, b: int, /) -> None",
		"echomq function run: () -> None",
		"echomq function mint: async () -> str",
		"echomq function mint: (kind: str) -> str", // an overload beside: the old one is still gone
		"echomq const VERSION: str",
		"echomq class State member DONE: 'done'",
	}
	var got []string
	for _, b := range ComparePyAPI(old, new) {
		got = append(got, b.Kind+" "+b.Where)
	}
	want := []string{
		"removed echomq class Queue method purge",
		"changed echomq class Queue method push",
		"changed echomq class Queue method size",
		"changed echomq class State member DONE",
		"changed echomq function keyed",
		"changed echomq function mint",
		"changed echomq function run",
	}
	if !slices.Equal(got, want) {
		t.Errorf("breaks\n%q\nwant\n%q", got, want)
	}
	if bs := ComparePyAPI(old, old); len(bs) != 0 {
		t.Errorf("a record compared with itself: %v", bs)
	}
	if bs := ComparePyAPI(old[:2], old); len(bs) != 0 {
		t.Errorf("additions are breaks: %v", bs)
	}
}

// Without python3 on PATH the Python API cannot be read, and the error
// says what to install.
func TestPyAPINeedsPython(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := PyAPI(context.Background(), "testdata/pyapi/echomq")
	if !errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), "apt-get install python3") {
		t.Errorf("PyAPI without python3: %v; want ErrNoPython with the install hint", err)
	}
}

// The Python SDK's own package (sdk/python/src/echomq) reads cleanly: its
// entry points are recorded, its private modules (_gen, _transport) and
// underscore names are not, and the generated wire classes re-exported
// by the package are.
func TestPyAPISDK(t *testing.T) {
	needPython(t)
	dir := filepath.Join("..", "..", "sdk", "python", "src", "echomq")
	got, err := PyAPI(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"echomq function connect: async (",
		"echomq class Client method queue: (name: str) -> Queue",
		"echomq class Queue method push: async (id: str, payload: Payload, *, delay: Duration | None = ..., attempts: int | None = ...",
		"echomq class Queue method push_batch: async (jobs: Sequence[NewJob], *, delay: Duration | None = ...",
		"echomq class StaleError: class(WireError)",
		"echomq const VERSION: str",
	} {
		if !slices.ContainsFunc(got, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("the SDK's record has no line starting %q", want)
		}
	}
	for _, l := range got {
		module, _, _ := strings.Cut(l, " ")
		if strings.Contains(module, "._") || (strings.Contains(l, " _") && !strings.Contains(l, " __")) {
			t.Errorf("a private module or name is recorded: %q", l)
		}
	}
}
