package manifest

import (
	"fmt"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hostile text is refused wherever it is: a manifest is reviewed by
// reading it, so nothing in it may read differently from what it is.
//
//   - Anywhere in the file — comments included — bidirectional controls
//     (the Trojan Source attack, CVE-2021-42574), zero-width and other
//     invisible characters, and control characters other than tab and the
//     line breaks are refused, each at its file:line:col. The same holds
//     for the value of every scalar, so that an escape ("\u202e") cannot
//     smuggle one in; only the invalid examples, test vectors of refused
//     input, may hold control characters (as escapes).
//   - Outside prose — in wire identifiers (names, words, keys, shapes,
//     patterns, values), refusal messages, script bodies and probe
//     commands — every character is ASCII: a homoglyph (a Cyrillic "а" in
//     a class word) would otherwise be a different identifier that reads
//     the same.

// proseFields hold text for people only: they may use any visible
// character.
var proseFields = map[string]bool{"summary": true, "semantics": true, "invariant": true, "when": true, "server": true, "check": true, "uniqueness": true, "nil": true, "reason": true, "meaning": true}

// vectorFields hold test vectors of refused input.
var vectorFields = map[string]bool{"invalid_examples": true}

// hostile names the kind of a character no manifest may hold, or "".
func hostile(r rune) string {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return ""
	case r == utf8.RuneError:
		return "an invalid UTF-8 byte"
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return "a bidirectional control character"
	case r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0xFEFF, r == 0x180E:
		return "a zero-width character"
	case r < 0x20, r == 0x7F, r >= 0x80 && r <= 0x9F:
		return "a control character"
	case r == 0x00AD, r == 0x034F, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x3164, r == 0xFFA0,
		r >= 0x2061 && r <= 0x2064, r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0000 && r <= 0xE0FFF, r >= 0xFFF9 && r <= 0xFFFB:
		return "an invisible character"
	case unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r) || unicode.Is(unicode.Cs, r):
		return "an invisible format character"
	case noBreakSpace(r):
		return "" // prose typography (a number kept with its unit); outside prose it is non-ASCII and refused as such
	case unicode.IsSpace(r) && r != ' ' && r != 0x85 && r != 0x2028 && r != 0x2029:
		return "a non-ASCII space"
	}
	return ""
}

// noBreakSpace reports whether r is a no-break space (U+00A0, the narrow
// U+202F, the figure space U+2007): visible spacing that prose uses to keep
// a number with its unit, as wide as the space it reads as. Outside prose
// every non-ASCII character is refused (checkValue), these too.
func noBreakSpace(r rune) bool { return r == 0x00A0 || r == 0x202F || r == 0x2007 }

// checkRaw refuses hostile characters in the file's text, before it is
// decoded (YAML refuses some of them too, but without a position). It
// returns where it found them.
func checkRaw(errs *Errors, data []byte) map[Pos]bool {
	lines := splitLines(data)
	seen := map[Pos]bool{}
	for i, l := range lines {
		col := 0
		for off, w := 0, 0; off < len(l); off += w {
			var r rune
			r, w = utf8.DecodeRuneInString(l[off:])
			col++
			if what := hostile(r); what != "" {
				p := Pos{Line: i + 1, Col: col}
				seen[p] = true
				errs.Addf(p, "%s (%s) is refused anywhere in the manifest: it makes the text read differently from what it is", what, runeName(r, l[off:off+w]))
			}
		}
	}
	if !utf8.Valid(data) && len(seen) == 0 {
		errs.Add(Pos{}, "the manifest is not valid UTF-8")
	}
	return seen
}

// checkValues refuses hostile characters in the decoded manifest's values
// (written as escapes) and non-ASCII outside prose; seen are the
// positions checkRaw already refused.
func checkValues(errs *Errors, m *Manifest, lines []string, seen map[Pos]bool) {
	walkStrs(reflect.ValueOf(*m), "", func(field string, s Str) { checkValue(errs, lines, seen, field, s) })
}

func runeName(r rune, raw string) string {
	if r == utf8.RuneError {
		return fmt.Sprintf("byte %#02x", raw[0])
	}
	return fmt.Sprintf("U+%04X", r)
}

// checkValue refuses hostile characters a scalar's value holds (through an
// escape) and non-ASCII outside prose.
func checkValue(errs *Errors, lines []string, seen map[Pos]bool, field string, s Str) {
	prose, vector := proseFields[field], vectorFields[field]
	for _, r := range s.V {
		what := hostile(r)
		if what == "" && r < utf8.RuneSelf || prose && what == "" {
			continue
		}
		if vector && (what == "a control character" || what == "") {
			continue
		}
		p := locate(lines, s.Pos, r)
		if seen[p] {
			return // already refused where it is written
		}
		switch {
		case what != "":
			errs.Addf(p, "%s: %s (U+%04X) is refused in any value (here written as an escape)", field, what, r)
		default:
			errs.Addf(p, "%s: the non-ASCII character %q (U+%04X) is refused outside prose: wire identifiers, messages, script bodies and probe commands are ASCII, so that no homoglyph reads as another name", field, r, r)
		}
		return
	}
}

// locate finds the first occurrence of r at or after pos in the file, for
// a precise position; the scalar's position when it is written as an
// escape.
func locate(lines []string, pos Pos, r rune) Pos {
	for i := max(pos.Line-1, 0); i < len(lines); i++ {
		l := lines[i]
		start := 0
		if i == pos.Line-1 {
			start = min(byteOffset(l, pos.Col-1), len(l))
		}
		if j := strings.IndexRune(l[start:], r); j >= 0 {
			return Pos{Line: i + 1, Col: utf8.RuneCountInString(l[:start+j]) + 1}
		}
	}
	return pos
}

// byteOffset is the byte offset of the n-th rune of s.
func byteOffset(s string, n int) int {
	off := 0
	for ; n > 0 && off < len(s); n-- {
		_, w := utf8.DecodeRuneInString(s[off:])
		off += w
	}
	return off
}

// walkStrs calls f with every Str of v and the yaml name of the field
// that holds it (the list's name for a list entry; a map's name for its
// keys and values).
func walkStrs(v reflect.Value, field string, f func(string, Str)) {
	switch v.Type() {
	case strType:
		f(field, v.Interface().(Str))
		return
	case reflect.TypeOf(Map{}):
		for _, p := range v.Interface().(Map) {
			f(field, p.Key)
			f(field, p.Value)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			walkStrs(v.Elem(), field, f)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
			if name != "" {
				walkStrs(v.Field(i), name, f)
			}
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			walkStrs(v.Index(i), field, f)
		}
	}
}
