package release

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/compat"
)

// PyAPI returns the path of the release's Python API record,
// <version>.py-api.txt: the public API of the Python SDK (sdk/python) when
// the version was released (apirecord.PyAPI). Releases frozen before the
// Python SDK existed have none.
func (r Release) PyAPI() string { return strings.TrimSuffix(r.Manifest, ".yaml") + ".py-api.txt" }

// HasPy reports whether the release records a Python API.
func (r Release) HasPy() bool {
	_, err := os.Stat(r.PyAPI())
	return err == nil
}

// addPy puts the release's Python API record, when it has one, on s.
func (r Release) addPy(s *compat.Surface) error {
	data, err := os.ReadFile(r.PyAPI())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	py, err := apirecord.ReadPyAPI(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %v", r.PyAPI(), err)
	}
	lines := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		lines[sc.Text()] = n
	}
	if py == nil {
		py = []string{}
	}
	s.Py, s.PyFile, s.PyLines = py, r.PyAPI(), lines
	return nil
}

// FreezePy records lines as the Python API of the frozen release r,
// unless r already records one: a frozen record is never rewritten. It
// returns the path written, or "" when nothing was.
func FreezePy(r Release, lines []string) (string, error) {
	if _, err := os.Stat(r.Manifest); err != nil {
		return "", fmt.Errorf("release: %s is not frozen: %w", r.Version, err)
	}
	if _, err := os.Stat(r.PyAPI()); err == nil {
		return "", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var b bytes.Buffer
	if err := apirecord.WritePyAPI(&b, r.Version.String(), lines); err != nil {
		return "", err
	}
	if err := os.WriteFile(r.PyAPI(), b.Bytes(), 0o644); err != nil {
		return "", err
	}
	return r.PyAPI(), nil
}
