package manifest

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a manifest, at a position in its file.
type Error struct {
	File string
	Pos  Pos
	Msg  string
}

// Error formats the problem as file:line:col: message.
func (e Error) Error() string {
	if e.Pos.IsZero() {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

// Errors collects every problem found in one manifest. Its Error method
// lists them one per line, sorted by position.
type Errors struct {
	File string
	List []Error
}

// lineBreaks escapes the line breaks a message may quote raw from the
// manifest, so that each problem stays on its line.
var lineBreaks = strings.NewReplacer("\r", `\r`, "\n", `\n`)

// Add records a problem at pos.
func (e *Errors) Add(pos Pos, msg string) {
	e.List = append(e.List, Error{File: e.File, Pos: pos, Msg: lineBreaks.Replace(msg)})
}

// Addf records a formatted problem at pos.
func (e *Errors) Addf(pos Pos, format string, args ...any) {
	e.Add(pos, fmt.Sprintf(format, args...))
}

// Err returns nil when no problem was recorded, and e sorted otherwise.
func (e *Errors) Err() error {
	if len(e.List) == 0 {
		return nil
	}
	sort.SliceStable(e.List, func(i, j int) bool {
		a, b := e.List[i].Pos, e.List[j].Pos
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return e
}

// Error lists the problems, one file:line:col: message per line.
func (e *Errors) Error() string {
	var b strings.Builder
	for i, x := range e.List {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(x.Error())
	}
	return b.String()
}

// Excerpt lists the problems like Error, and under each one that has a
// position inside src (the manifest's bytes) the offending source line,
// indented, with a caret under the column:
//
//	protocol.yaml:25:10: version: "2.0" is not a version ...
//	    version: 2.0
//	             ^
func (e *Errors) Excerpt(src []byte) string {
	lines := splitLines(src)
	var b strings.Builder
	for i, x := range e.List {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(x.Error())
		if x.Pos.Line < 1 || x.Pos.Line > len(lines) {
			continue
		}
		line := strings.TrimRight(lines[x.Pos.Line-1], "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		var caret strings.Builder
		col := 1
		for _, r := range line {
			if col >= x.Pos.Col {
				break
			}
			if r == '\t' {
				caret.WriteByte('\t')
			} else {
				caret.WriteByte(' ')
			}
			col++
		}
		fmt.Fprintf(&b, "\n    %s\n    %s^", line, caret.String())
	}
	return b.String()
}
