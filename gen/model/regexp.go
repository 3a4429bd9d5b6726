package model

import (
	"math"
	"regexp/syntax"
)

func parseSyntax(pattern string) (*syntax.Regexp, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return re.Simplify(), nil
}

// maxLen is the longest match of re in bytes (runes counted as their
// longest UTF-8 form), math.MaxInt when unbounded.
func maxLen(re *syntax.Regexp) int {
	add := func(a, b int) int {
		if a == math.MaxInt || b == math.MaxInt {
			return math.MaxInt
		}
		return a + b
	}
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			n += len(string(r))
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		if re.Op == syntax.OpCharClass && len(re.Rune) > 0 && re.Rune[len(re.Rune)-1] < 0x80 {
			return 1
		}
		return 4
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n = add(n, maxLen(s))
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			n = max(n, maxLen(s))
		}
		return n
	case syntax.OpCapture:
		return maxLen(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		if maxLen(re.Sub[0]) == 0 {
			return 0
		}
		return math.MaxInt
	case syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return math.MaxInt
		}
		m := maxLen(re.Sub[0])
		if m == math.MaxInt {
			return m
		}
		return m * re.Max
	}
	return 0
}
