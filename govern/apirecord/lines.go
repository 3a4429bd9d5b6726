package apirecord

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// lineKey splits a line of a language's API record ("<module> <kind>
// <name>...: <type>") into its key and its type; lang names the language
// in the error.
func lineKey(lang, line string) (key, typ string, err error) {
	key, typ, ok := strings.Cut(line, ": ")
	if !ok || strings.TrimSpace(key) == "" || strings.ContainsAny(line, "\r\n") || strings.Count(key, " ") < 2 {
		return "", "", fmt.Errorf("a %s API line is \"<module> <kind> <name>...: <type>\", not %q", lang, line)
	}
	return key, typ, nil
}

// writeLines writes the on-disk record of a language's API: the Header
// line, the language's header, "# Version: <version>", then the lines
// sorted and without duplicates. A line key refuses, or a version that is
// empty or spans lines, is an error and nothing is written.
func writeLines(w io.Writer, header, version string, lines []string, key func(string) (string, string, error)) error {
	if version == "" || strings.ContainsAny(version, "\r\n") {
		return fmt.Errorf("surface: version %q is empty or spans lines", version)
	}
	sorted := sortedKeys(set(lines))
	for _, l := range sorted {
		if _, _, err := key(l); err != nil {
			return fmt.Errorf("surface: %w", err)
		}
	}
	var b strings.Builder
	b.WriteString(Header + "\n" + header + "\n" + versionPrefix + version + "\n")
	for _, l := range sorted {
		b.WriteString(l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// readLines reads a record writeLines wrote and returns its lines.
// Comment and blank lines are ignored; a line key refuses, a duplicate or
// a line out of order is reported with its line number.
func readLines(r io.Reader, key func(string) (string, string, error)) ([]string, error) {
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
		if _, _, err := key(l); err != nil {
			return nil, fmt.Errorf("surface: line %d: %w", n, err)
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

// compareLines compares two API records of one language: every line of
// old missing from new is a break, Changed when new has a line with the
// same key (the feature exists with another type or signature; an
// overload has one line per signature) and Removed otherwise, unless some
// line of new with that key is compatible with it (every call written
// against the old one still works). Additions are compatible. The breaks
// are sorted by Where, then Old.
func compareLines(old, new []string, key func(string) (string, string, error), compatible func(oldLine, newLine string) bool) []Break {
	newSet := set(new)
	newByKey := map[string][]string{}
	for _, l := range sortedKeys(newSet) {
		k, _, err := key(l)
		if err != nil {
			k = l
		}
		newByKey[k] = append(newByKey[k], l)
	}
	var out []Break
	for _, l := range sortedKeys(set(old)) {
		if newSet[l] {
			continue
		}
		k, _, err := key(l)
		if err != nil {
			k = l
		}
		if now := newByKey[k]; len(now) > 0 {
			if slices.ContainsFunc(now, func(n string) bool { return compatible(l, n) }) {
				continue
			}
			out = append(out, Break{Kind: Changed, Where: k, Old: l, New: strings.Join(now, "; "),
				Message: fmt.Sprintf("%s changed: was %s; now %s", k, l, strings.Join(now, "; "))})
			continue
		}
		out = append(out, Break{Kind: Removed, Where: k, Old: l, Message: fmt.Sprintf("%s removed (was: %s)", k, l)})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Where != out[j].Where {
			return out[i].Where < out[j].Where
		}
		return out[i].Old < out[j].Old
	})
	return out
}
