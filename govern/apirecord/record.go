package apirecord

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/echomq/echomq/gen/header"
)

// Header is the first line of a record WriteAPI writes.
const Header = "# " + header.Marker

// versionPrefix starts the record's second line.
const versionPrefix = "# Version: "

// WriteAPI writes the on-disk record of a Go API: the Header line, a line
// "# Version: <version>", then lines sorted and without duplicates, one
// feature per line. A line GoAPI could not have produced, or a version
// that is empty or spans lines, is an error and nothing is written.
func WriteAPI(w io.Writer, version string, lines []string) error {
	if version == "" || strings.ContainsAny(version, "\r\n") {
		return fmt.Errorf("surface: version %q is empty or spans lines", version)
	}
	sorted := sortedKeys(set(lines))
	for _, l := range sorted {
		if _, err := parseLine(l); err != nil {
			return fmt.Errorf("surface: %w", err)
		}
	}
	var b strings.Builder
	b.WriteString(Header + "\n")
	b.WriteString(versionPrefix + version + "\n")
	for _, l := range sorted {
		b.WriteString(l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadAPI reads a record WriteAPI wrote and returns its feature lines as
// written. Lines starting with # and blank lines are ignored (a trailing
// \r is tolerated); a malformed feature line, a duplicate, a line out of
// order, or an unqualified line in a record whose first line is
// package-qualified (or the reverse) is reported with its line number.
// Normalize turns the lines of an old, unqualified record into
// package-qualified ones.
func ReadAPI(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var lines []string
	n := 0
	for sc.Scan() {
		n++
		l := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if _, err := parseLine(l); err != nil {
			return nil, fmt.Errorf("surface: line %d: %w", n, err)
		}
		if k := len(lines); k > 0 && strings.HasPrefix(l, pkgPrefix) != strings.HasPrefix(lines[0], pkgPrefix) {
			return nil, fmt.Errorf("surface: line %d: %q mixes package-qualified and unqualified lines (the record's first line is %q)", n, l, lines[0])
		}
		if k := len(lines); k > 0 {
			switch prev := lines[k-1]; {
			case prev == l:
				return nil, fmt.Errorf("surface: line %d: duplicate %q", n, l)
			case prev > l:
				return nil, fmt.Errorf("surface: line %d: %q is out of order (after %q)", n, l, prev)
			}
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("surface: line %d: %w", n+1, err)
	}
	return lines, nil
}

// Normalize returns the lines of a record in the package-qualified form
// SDKAPI produces. The lines of a record written before records were
// package-qualified (releases 2.0.0 to 2.1.1, whose record holds only the
// generated layer) are read as lines of LegacyPackage, where that layer
// lives now with the same exported names: "func ParseID(string) (ID,
// error)" becomes "pkg <LegacyPackage>, func ParseID(string) (ID,
// error)". Qualified lines are returned as they are. The frozen files
// themselves are never rewritten.
func Normalize(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.HasPrefix(l, pkgPrefix) {
			out[i] = l
		} else {
			out[i] = Qualify(LegacyPackage, l)
		}
	}
	return out
}
