package apirecord

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The Python surface is the public API of the Python SDK (sdk/python,
// package echomq): every public name of every public module of the
// package, read from its sources with Python's ast module (pyapi.py,
// embedded; nothing of the package is imported or run), one feature per
// line. A line is "<module> <feature>: <type>" — everything before the
// first ": " is the feature's key, e.g. "echomq class Queue method push"
// with the type "async (id: str, payload: bytes) -> bool". Parameter names
// are part of a signature: Python callers may pass any parameter by
// keyword.

// PyHeader is the comment line after Header in a Python API record.
const PyHeader = "# The public Python API of sdk/python (package echomq), read from its sources with Python's ast module (govern/apirecord/pyapi.py)."

//go:embed pyapi.py
var pyTool []byte

// ErrNoPython means the Python API cannot be read here: python3 is missing.
var ErrNoPython = errors.New("surface: the Python API cannot be recorded here")

// pyHint says how to make the Python API readable.
const pyHint = "recording the Python API runs python3 (3.9 or later; Debian: apt-get install python3); ./test.sh installs it"

// PyAPI reads the public Python API of the package in dir (a directory
// with an __init__.py, e.g. sdk/python/src/echomq): it runs the embedded
// pyapi.py under python3, which parses the package's sources and imports
// nothing. It fails with ErrNoPython, saying what to install, when python3
// is missing, and with the tool's message when a source does not parse or
// an __all__ names something undefined.
func PyAPI(ctx context.Context, dir string) ([]string, error) {
	py, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("%w: python3 is not on PATH: %s", ErrNoPython, pyHint)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(abs, "__init__.py")); err != nil {
		return nil, fmt.Errorf("surface: %s is not a Python package (no __init__.py)", dir)
	}
	key, keyErr := pySourceKey(py, abs)
	if keyErr == nil {
		if lines, ok := cacheLoad(key); ok && validLines(lines, pyKey) {
			return lines, nil
		}
	}
	toolRuns.Add(1)
	var stdout, stderr bytes.Buffer
	// -I: isolated (no user site, no PYTHON* variables, the tool's own
	// directory not on sys.path); -B: no bytecode written; the program
	// comes on stdin.
	cmd := exec.CommandContext(ctx, py, "-I", "-B", "-", abs)
	cmd.Stdin = bytes.NewReader(pyTool)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("surface: reading the Python API of %s: %v: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	var lines []string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if l == "" {
			continue
		}
		if _, _, err := pyKey(l); err != nil {
			return nil, fmt.Errorf("surface: pyapi.py printed %w", err)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("surface: pyapi.py printed no API for %s", dir)
	}
	if keyErr == nil {
		cacheStore(key, lines)
	}
	return lines, nil
}

// pySourceKey names what the Python API of the package in dir depends
// on: the python3 binary, the tool (pyapi.py) and every .py and .pyi file
// of the package, by content (__pycache__ left out).
func pySourceKey(py, dir string) (string, error) {
	h := keyHash("python")
	hashProgram(h, py)
	fmt.Fprintf(h, "%s\x00%d\x00", dir, len(pyTool))
	h.Write(pyTool)
	keep := func(name string) bool {
		return strings.HasSuffix(name, ".py") || strings.HasSuffix(name, ".pyi") || name == "py.typed"
	}
	if err := hashTree(h, dir, dir, keep, "__pycache__"); err != nil {
		return "", err
	}
	return "py-" + hex.EncodeToString(h.Sum(nil)), nil
}

// pyKey splits a Python API line into its key and its type.
func pyKey(line string) (key, typ string, err error) {
	return lineKey("Python", line)
}

// WritePyAPI writes the on-disk record of a Python API: the Header line,
// PyHeader, "# Version: <version>", then the lines sorted and without
// duplicates. A malformed line, or a version that is empty or spans lines,
// is an error and nothing is written.
func WritePyAPI(w io.Writer, version string, lines []string) error {
	return writeLines(w, PyHeader, version, lines, pyKey)
}

// ReadPyAPI reads a record WritePyAPI wrote and returns its lines. Comment
// and blank lines are ignored; a malformed line, a duplicate or a line out
// of order is reported with its line number.
func ReadPyAPI(r io.Reader) ([]string, error) {
	return readLines(r, pyKey)
}

// ComparePyAPI compares two Python API records as apidiff compares Go
// APIs: every line of old missing from new is a break, Changed when new
// has a line with the same key (the feature exists with another type or
// signature; an @overload has one line per signature) and Removed
// otherwise. Additions are compatible, and so is a function's or method's
// signature that only gained parameters every old call leaves out: a
// positional parameter with a default after the old positional ones, a
// keyword-only parameter with a default, *args or **kwargs where there
// were none (pyCallCompatible). The breaks are sorted by Where, then Old.
func ComparePyAPI(old, new []string) []Break {
	return compareLines(old, new, pyKey, func(o, n string) bool {
		_, ot, oerr := pyKey(o)
		_, nt, nerr := pyKey(n)
		return oerr == nil && nerr == nil && pyCallCompatible(ot, nt)
	})
}

// pyCallCompatible reports whether every call of a function with the old
// signature "[async ](P...) -> R" is a valid call of one with the new
// signature: the same async-ness and return annotation; the old positional
// parameters (up to the first "*" or "*args") a prefix of the new ones,
// the extra ones with defaults; every old keyword-only parameter among the
// new ones, the extra ones with defaults; an old *args and **kwargs kept
// as they were (a bare "*" may become *args), new ones allowed.
func pyCallCompatible(oldSig, newSig string) bool {
	oa, op, or, ok1 := splitPySignature(oldSig)
	na, np, nr, ok2 := splitPySignature(newSig)
	if !ok1 || !ok2 || oa != na || or != nr {
		return false
	}
	split := func(ps []string) (pos []string, star string, kw []string, kwargs string) {
		i := slices.IndexFunc(ps, func(p string) bool { return strings.HasPrefix(p, "*") && !strings.HasPrefix(p, "**") })
		if i < 0 {
			i = len(ps)
		}
		pos = ps[:i]
		if i < len(ps) {
			star = ps[i]
			ps = ps[i+1:]
		} else {
			ps = nil
		}
		for _, p := range ps {
			if strings.HasPrefix(p, "**") {
				kwargs = p
			} else {
				kw = append(kw, p)
			}
		}
		if n := len(pos); n > 0 && strings.HasPrefix(pos[n-1], "**") {
			kwargs, pos = pos[n-1], pos[:n-1]
		}
		return pos, star, kw, kwargs
	}
	defaulted := func(p string) bool { return strings.HasSuffix(p, " = ...") }
	opos, ostar, okw, okwargs := split(op)
	npos, nstar, nkw, nkwargs := split(np)
	if len(npos) < len(opos) || !slices.Equal(opos, npos[:len(opos)]) {
		return false
	}
	for _, p := range npos[len(opos):] {
		if !defaulted(p) {
			return false
		}
	}
	switch {
	case ostar == nstar, ostar == "" || ostar == "*":
	default:
		return false // *args gone or changed
	}
	for _, p := range okw {
		if !slices.Contains(nkw, p) {
			return false
		}
	}
	for _, p := range nkw {
		if !slices.Contains(okw, p) && !defaulted(p) {
			return false
		}
	}
	return okwargs == "" || okwargs == nkwargs
}

// splitPySignature splits "[async ](A, B) -> R" into whether it is async,
// its parameters (split at the commas outside brackets) and its return
// annotation.
func splitPySignature(sig string) (async bool, params []string, ret string, ok bool) {
	sig, async = strings.CutPrefix(sig, "async ")
	if !strings.HasPrefix(sig, "(") {
		return false, nil, "", false
	}
	depth, start := 0, 1
	var quote byte
	for i := 0; i < len(sig); i++ {
		c := sig[i]
		if quote != 0 {
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				if p := strings.TrimSpace(sig[start:i]); p != "" {
					params = append(params, p)
				}
				rest, found := strings.CutPrefix(sig[i+1:], " -> ")
				return async, params, rest, found
			}
		case ',':
			if depth == 1 {
				params = append(params, strings.TrimSpace(sig[start:i]))
				start = i + 1
			}
		}
	}
	return false, nil, "", false
}
