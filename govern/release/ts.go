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

// TSAPI returns the path of the release's TypeScript API record,
// <version>.ts-api.txt: the public API of the TypeScript SDK (sdk/ts) when
// the version was released (apirecord.TSAPI). Releases frozen before the
// TypeScript SDK existed have none.
func (r Release) TSAPI() string { return strings.TrimSuffix(r.Manifest, ".yaml") + ".ts-api.txt" }

// HasTS reports whether the release records a TypeScript API.
func (r Release) HasTS() bool {
	_, err := os.Stat(r.TSAPI())
	return err == nil
}

// addTS puts the release's TypeScript API record, when it has one, on s.
func (r Release) addTS(s *compat.Surface) error {
	data, err := os.ReadFile(r.TSAPI())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	ts, err := apirecord.ReadTSAPI(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %v", r.TSAPI(), err)
	}
	lines := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		lines[sc.Text()] = n
	}
	if ts == nil {
		ts = []string{}
	}
	s.TS, s.TSFile, s.TSLines = ts, r.TSAPI(), lines
	return nil
}

// FreezeTS records lines as the TypeScript API of the frozen release r,
// unless r already records one: a frozen record is never rewritten. It
// returns the path written, or "" when nothing was.
func FreezeTS(r Release, lines []string) (string, error) {
	if _, err := os.Stat(r.Manifest); err != nil {
		return "", fmt.Errorf("release: %s is not frozen: %w", r.Version, err)
	}
	if _, err := os.Stat(r.TSAPI()); err == nil {
		return "", nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var b bytes.Buffer
	if err := apirecord.WriteTSAPI(&b, r.Version.String(), lines); err != nil {
		return "", err
	}
	if err := os.WriteFile(r.TSAPI(), b.Bytes(), 0o644); err != nil {
		return "", err
	}
	return r.TSAPI(), nil
}
