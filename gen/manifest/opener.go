package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// An opener is a construct that must be closed: a quoted scalar or a flow
// collection ([...] or {...}), at the position where it begins. A wrong
// closer (a ] where the innermost open collection is a {) is an opener
// too, at the closer, with wrong set.
type opener struct {
	pos   Pos
	close string // the closing character
	wrong bool   // pos is a closer that should have been close
}

func (o opener) describe() string {
	if o.wrong {
		return "this closes a flow collection that needs " + o.close
	}
	switch o.close {
	case `"`, `'`:
		return fmt.Sprintf("the %s-quoted string that begins here is not closed on its line", map[string]string{`"`: "double", `'`: "single"}[o.close])
	case "]":
		return "the [ that begins here is not closed on its line"
	}
	return "the { that begins here is not closed on its line"
}

// syntaxError places a yaml.v3 syntax error. yaml.v3 names the line of the
// construct it was parsing when it gave up (often the enclosing mapping) or
// the end of the stream, and never a column; when the cause is a quote or
// a flow collection left open, the error belongs where that construct
// opened. An open construct is blamed only when closing it on its own line
// makes the error go away (the file then parses, or fails only further
// down), so a legitimately multi-line string is never blamed.
func syntaxError(err error, data []byte) (Pos, string) {
	pos, msg := syntaxPos(err, data), "YAML syntax: "+syntaxMsg(err)
	if strings.Contains(msg, "tab character") {
		return pos, msg
	}
	lines := splitLines(data)
	for i, cand := range unclosed(lines) {
		if i == 8 { // bounded work; the first few candidates are the ones that matter
			break
		}
		fixed := repair(lines, cand)
		ferr := parseOnly(fixed)
		if ferr == nil || syntaxPos(ferr, fixed).Line > max(pos.Line, cand[0].pos.Line) {
			return cand[0].pos, msg + " (" + cand[0].describe() + ")"
		}
	}
	if p, ok := offender(lines, syntaxMsg(err), pos); ok {
		return p, msg + fmt.Sprintf(" (check this line's indentation: it breaks the block that begins at line %d)", pos.Line)
	}
	return pos, msg
}

// offender finds the line a block-structure error is about. yaml.v3
// reports a parser error at its context — where the enclosing block began
// (the first entry of scripts, for an entry's key indented one space too
// few a thousand lines below) — not at the token that broke it. The first
// lines of the file, cut at a line break, parse whenever they end before
// that token; so the shortest such prefix that fails with the same problem
// ends at the offending line, found by bisection (a dozen parses of the
// file's head).
func offender(lines []string, msg string, pos Pos) (Pos, bool) {
	if pos.Line == 0 || !parserProblems[msg] {
		return Pos{}, false
	}
	fails := func(k int) bool {
		err := parseOnly([]byte(strings.Join(lines[:k], "\n") + "\n"))
		return err != nil && syntaxMsg(err) == msg
	}
	lo, hi := pos.Line, len(lines)
	if !fails(hi) {
		return Pos{}, false
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if hi <= pos.Line {
		return Pos{}, false
	}
	line := lines[hi-1]
	return Pos{Line: hi, Col: len(line) - len(strings.TrimLeft(line, " ")) + 1}, true
}

// parseOnly reports the syntax error of data's first document, if any.
func parseOnly(data []byte) error {
	var n yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&n)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// repair closes, at the end of its line, every construct of cand (the
// constructs left open on one line, outermost first).
func repair(lines []string, cand []opener) []byte {
	out := append([]string(nil), lines...)
	i := cand[0].pos.Line - 1
	line := strings.TrimRight(out[i], "\r")
	if cand[0].wrong {
		rs := []rune(line)
		rs[cand[0].pos.Col-1] = []rune(cand[0].close)[0]
		out[i] = string(rs)
		return []byte(strings.Join(out, "\n"))
	}
	for j := len(cand) - 1; j >= 0; j-- {
		line += cand[j].close
	}
	out[i] = line
	return []byte(strings.Join(out, "\n"))
}

// unclosed scans the lines as YAML's block and flow styles lay them out
// and returns, per line in file order, the constructs opened on that line
// and still open at its end (outermost first). Block scalars (| and >) and
// comments are skipped. It is a heuristic for placing errors, not a
// parser: the candidates are checked by re-parsing.
func unclosed(lines []string) [][]opener {
	var out [][]opener
	var stack []opener // open flow collections and at most one quote, on top
	blockIndent := -1  // inside a block scalar: lines indented more than this belong to it
	for n, raw := range lines {
		line := strings.TrimRight(raw, "\r")
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if blockIndent >= 0 {
			if strings.TrimSpace(line) == "" || indent > blockIndent {
				continue
			}
			blockIndent = -1
		}
		if len(stack) > 0 && stack[len(stack)-1].pos.Line < n+1 {
			// A construct from an earlier line runs on: not this scan's
			// business (the earlier line is the candidate).
			stack = stack[:0]
		}
		start := true // at the start of a token: a value may begin here
		rs := []rune(line)
		for i := 0; i < len(rs); i++ {
			c := rs[i]
			if top := len(stack) - 1; top >= 0 && (stack[top].close == `"` || stack[top].close == `'`) {
				switch {
				case c == '\\' && stack[top].close == `"`:
					i++
				case c == '\'' && stack[top].close == `'` && i+1 < len(rs) && rs[i+1] == '\'':
					i++
				case string(c) == stack[top].close:
					stack = stack[:top]
					start = false
				}
				continue
			}
			switch {
			case c == ' ':
				continue
			case c == '#' && (i == 0 || rs[i-1] == ' '):
				i = len(rs)
				continue
			case start && (c == '"' || c == '\''):
				stack = append(stack, opener{pos: Pos{n + 1, i + 1}, close: string(c)})
				continue
			case start && (c == '[' || c == '{'):
				stack = append(stack, opener{pos: Pos{n + 1, i + 1}, close: map[rune]string{'[': "]", '{': "}"}[c]})
				continue
			case start && c == '-' && (i+1 == len(rs) || rs[i+1] == ' '):
				continue
			case start && (c == '|' || c == '>') && len(stack) == 0 && blockHeader(string(rs[i+1:])):
				blockIndent = keyIndent(line)
				i = len(rs)
				continue
			case len(stack) > 0 && (c == ']' || c == '}'):
				if top := stack[len(stack)-1]; top.close != string(c) {
					// [ closed by } or { by ]: the wrong closer is the
					// culprit, and only the right one repairs the line.
					out = append(out, []opener{{Pos{n + 1, i + 1}, top.close, true}})
					stack = stack[:0]
					i = len(rs)
					continue
				}
				stack = stack[:len(stack)-1]
				start = false
				continue
			case len(stack) > 0 && c == ',':
				start = true
				continue
			case c == ':' && (i+1 == len(rs) || rs[i+1] == ' '):
				start = true
				continue
			}
			start = false
		}
		if len(stack) > 0 && stack[0].pos.Line == n+1 {
			out = append(out, append([]opener(nil), stack...))
		}
	}
	return out
}

// blockHeader reports whether rest, what follows a | or >, is the rest of
// a block scalar's header: indentation and chomping indicators, then
// nothing but an optional comment.
func blockHeader(rest string) bool {
	rest = strings.TrimLeft(rest, "+-0123456789")
	rest = strings.TrimLeft(rest, " ")
	return rest == "" || strings.HasPrefix(rest, "#")
}

// keyIndent is the column (0-based) where a line's key begins, past its
// indentation and any sequence indicators ("  - body: |" -> 4): a block
// scalar's content is indented more than that.
func keyIndent(line string) int {
	i := 0
	for i < len(line) {
		switch {
		case line[i] == ' ':
			i++
		case line[i] == '-' && (i+1 == len(line) || line[i+1] == ' '):
			i++
		default:
			return i
		}
	}
	return i
}
