package apirecord

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// feature is one API line taken apart.
type feature struct {
	// key names the feature without its type: const X, var X, func F,
	// method (*T) M, type T, type T struct, F, type T struct, embedded E,
	// type T interface, M, type T interface, embedded E, or the whole line
	// for type T interface, unexported methods.
	key string
	// sig is the rest: the type, signature or underlying type; "" for
	// embedded, unexported-methods and header-less lines.
	sig string
	// owner is the type a member line belongs to ("" for other lines).
	owner string
	// member is "field", "embedded", "method", "unexported" or "" for a
	// line that is not a member of a struct or interface.
	member string
	// container is "struct" or "interface" for member lines and for the
	// type header lines of structs and interfaces.
	container string
	// pkg is the "pkg <import path>, " prefix of a package-qualified
	// line, which key also starts with; "" for an unqualified line.
	pkg string
}

// parseLine takes an API line apart, package-qualified (see SDKAPI) or
// not; it fails on anything SDKAPI or GoAPI does not produce.
func parseLine(line string) (feature, error) {
	rest, ok := strings.CutPrefix(line, pkgPrefix)
	if !ok {
		return parseBare(line)
	}
	ip, rest, ok := strings.Cut(rest, ", ")
	if !ok || ip == "" || strings.ContainsAny(ip, " ,") {
		return feature{}, fmt.Errorf("malformed API line %q: want pkg IMPORTPATH, FEATURE", line)
	}
	f, err := parseBare(rest)
	if err != nil {
		return feature{}, fmt.Errorf("malformed API line %q: %w", line, errors.Unwrap(err))
	}
	f.pkg = pkgPrefix + ip + ", "
	f.key = f.pkg + f.key
	return f, nil
}

// parseBare takes an unqualified API line apart; it fails on anything
// GoAPI does not produce.
func parseBare(line string) (feature, error) {
	bad := func(why string) (feature, error) {
		return feature{}, fmt.Errorf("malformed API line %q: %w", line, errors.New(why))
	}
	if line != strings.TrimSpace(line) || strings.ContainsAny(line, "\n\r\t") {
		return bad("stray whitespace")
	}
	word, rest, _ := strings.Cut(line, " ")
	switch word {
	case "const", "var":
		name, typ, ok := strings.Cut(rest, " ")
		if !ok || !isIdent(name) || typ == "" {
			return bad("want " + word + " NAME TYPE")
		}
		return feature{key: word + " " + name, sig: typ}, nil
	case "func":
		n := identLen(rest)
		if n == 0 || n == len(rest) || (rest[n] != '(' && rest[n] != '[') {
			return bad("want func NAME(...)")
		}
		return feature{key: "func " + rest[:n], sig: rest[n:]}, nil
	case "method":
		if !strings.HasPrefix(rest, "(") {
			return bad("want method (RECEIVER) NAME(...)")
		}
		end := matching(rest, 0)
		if end < 0 || end+1 >= len(rest) || rest[end+1] != ' ' {
			return bad("want method (RECEIVER) NAME(...)")
		}
		recv, after := rest[:end+1], rest[end+2:]
		n := identLen(after)
		if n == 0 || n == len(after) || after[n] != '(' || len(recv) <= 2 {
			return bad("want method (RECEIVER) NAME(...)")
		}
		return feature{key: "method " + recv + " " + after[:n], sig: after[n:]}, nil
	case "type":
		n := identLen(rest)
		if n == 0 || n == len(rest) {
			return bad("want type NAME ...")
		}
		name, after := rest[:n], rest[n:]
		tparams := ""
		if after[0] == '[' {
			end := matching(after, 0)
			if end < 0 {
				return bad("unbalanced type parameters")
			}
			tparams, after = after[:end+1], after[end+1:]
		}
		if !strings.HasPrefix(after, " ") || len(after) == 1 {
			return bad("want type NAME TYPE")
		}
		after = after[1:]
		for _, c := range []string{"struct", "interface"} {
			m, ok := strings.CutPrefix(after, c+", ")
			if !ok {
				continue
			}
			f := feature{owner: name, container: c}
			prefix := "type " + name + " " + c + ", "
			switch {
			case c == "interface" && m == "unexported methods":
				f.key, f.member = prefix+m, "unexported"
			case strings.HasPrefix(m, "embedded "):
				e := strings.TrimPrefix(m, "embedded ")
				if e == "" {
					return bad("embedded nothing")
				}
				f.key, f.sig, f.member = prefix+"embedded "+embeddedKey(e), e, "embedded"
			case c == "struct":
				fn, ft, ok := strings.Cut(m, " ")
				if !ok || !isIdent(fn) || ft == "" {
					return bad("want type NAME struct, FIELD TYPE")
				}
				f.key, f.sig, f.member = prefix+fn, ft, "field"
			default:
				k := identLen(m)
				if k == 0 || k == len(m) || m[k] != '(' {
					return bad("want type NAME interface, METHOD(...)")
				}
				f.key, f.sig, f.member = prefix+m[:k], m[k:], "method"
			}
			return f, nil
		}
		f := feature{key: "type " + name, sig: tparams + " " + after}
		if tparams == "" {
			f.sig = after
		}
		if after == "struct" || after == "interface" {
			f.container = after
		}
		return f, nil
	}
	return bad("want const, var, func, method or type")
}

// embeddedKey is what identifies an embedded element: the field name a
// named type declares, or the whole element (a type-set term).
func embeddedKey(e string) string {
	s := strings.TrimPrefix(e, "*")
	if i := strings.IndexByte(s, '['); i > 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	if isIdent(s) {
		return s
	}
	return e
}

// identLen is the length of the identifier s starts with.
func identLen(s string) int {
	n := 0
	for i, r := range s {
		if r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r)) {
			n = i + utf8.RuneLen(r)
			continue
		}
		break
	}
	return n
}

func isIdent(s string) bool { return s != "" && identLen(s) == len(s) }

// matching returns the index of the bracket closing the one at s[i], or
// -1.
func matching(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}
