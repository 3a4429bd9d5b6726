package lang

import (
	"strings"

	"github.com/echomq/echomq/govern/apirecord"
)

// ExplainLine spells a break of a record whose lines are "<key>: <type>"
// (the TypeScript and Python records): the key, and "gone from the <title>
// SDK's public API (was: <type>)" for a removal, the break's own message
// for a move between entry points (apirecord.Moved), else "was: <type>;
// now: <type> | <type>..." (an overloaded feature has one line per
// signature).
func ExplainLine(title string, b apirecord.Break) (where, message string) {
	typ := func(line string) string { return strings.TrimPrefix(line, b.Where+": ") }
	switch b.Kind {
	case apirecord.Removed:
		return b.Where, "gone from the " + title + " SDK's public API (was: " + typ(b.Old) + ")"
	case apirecord.Moved:
		return b.Where, b.Message
	}
	var now []string
	for _, l := range strings.Split(b.New, "; "+b.Where+": ") {
		now = append(now, typ(l))
	}
	return b.Where, "was: " + typ(b.Old) + "; now: " + strings.Join(now, " | ")
}

// LineNumbers maps every line of a record's text to its 1-based line
// number (the last, should one repeat).
func LineNumbers(data []byte) map[string]int {
	at := map[string]int{}
	for i, l := range strings.Split(string(data), "\n") {
		at[strings.TrimSuffix(l, "\r")] = i + 1
	}
	return at
}
