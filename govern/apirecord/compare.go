package apirecord

import (
	"fmt"
	"sort"
	"strings"
)

// The kinds of Break.
const (
	// Removed is a feature, script or slot of the old surface that the
	// new one lacks.
	Removed = "removed"
	// Changed is a feature whose type or signature, or a script whose
	// KEYS or ARGV, differ between the old surface and the new.
	Changed = "changed"
	// Added is an addition that breaks code written against the old
	// surface: a method (or embedded interface, or unexported method) added
	// to an interface that code outside the package could implement, which
	// such implementations then no longer satisfy.
	Added = "added"
)

// Break is one incompatibility of a new surface with an old one: code
// compiled or scripts called against the old one may fail against the new.
type Break struct {
	// Kind is Removed, Changed or Added.
	Kind string
	// Where identifies the feature: an API line's key (everything before
	// its type, e.g. "func ParseID", "type ClaimReply struct, ID",
	// "method (*Queue) Claim", "const Version"), or "script NAME",
	// "script NAME KEYS" or "script NAME ARGV" for Lua slots.
	Where string
	// Old is the old API line or slot list; "" for Added.
	Old string
	// New is the new API line or slot list; "" for Removed.
	New string
	// Message explains the break in a sentence.
	Message string
}

// String returns the break's message.
func (b Break) String() string { return b.Message }

// describe parses an API line leniently: a malformed line is keyed by
// itself, so that it is only ever reported as removed.
func describe(line string) feature {
	f, err := parseLine(line)
	if err != nil {
		return feature{key: line}
	}
	return f
}

// CompareAPI compares two Go API records (lines as GoAPI returns them)
// the way golang.org/x/exp/apidiff judges compatibility: every line of old
// that is missing from new is a break, reported as Changed when a line of
// new has the same feature key (the feature still exists with another
// type, signature or underlying type) and as Removed otherwise. Additions
// are compatible, with one exception apidiff also makes: an interface
// that code outside the package could implement (its old record has no
// "unexported methods" line) breaks those implementations when it gains a
// method, an embedded element or an unexported method, reported as Added.
// A parameter's name is not part of a line, so renaming one breaks
// nothing. The breaks are sorted by Where, then Kind, Old and New.
func CompareAPI(old, new []string) []Break {
	oldSet, newSet := set(old), set(new)
	newByKey := map[string]string{}
	for _, l := range sortedKeys(newSet) {
		k := describe(l).key
		if _, ok := newByKey[k]; !ok {
			newByKey[k] = l
		}
	}
	var breaks []Break
	oldKeys := map[string]bool{}
	// Interfaces of old that outside code could implement.
	openIface := map[string]bool{}
	for _, l := range sortedKeys(oldSet) {
		f := describe(l)
		oldKeys[f.key] = true
		if f.container == "interface" && f.member == "" {
			openIface[f.key] = true
		}
	}
	for _, l := range sortedKeys(oldSet) {
		f := describe(l)
		if f.member == "unexported" {
			delete(openIface, f.pkg+"type "+f.owner)
		}
		if newSet[l] {
			continue
		}
		if nl, ok := newByKey[f.key]; ok {
			nf := describe(nl)
			breaks = append(breaks, Break{
				Kind:    Changed,
				Where:   f.key,
				Old:     l,
				New:     nl,
				Message: fmt.Sprintf("%s changed from %s to %s", f.key, orLine(f.sig, l), orLine(nf.sig, nl)),
			})
			continue
		}
		breaks = append(breaks, Break{
			Kind:    Removed,
			Where:   f.key,
			Old:     l,
			Message: fmt.Sprintf("%s was removed (it was %s)", f.key, l),
		})
	}
	for _, l := range sortedKeys(newSet) {
		f := describe(l)
		if oldSet[l] || oldKeys[f.key] || f.container != "interface" || f.member == "" {
			continue
		}
		header := f.pkg + "type " + f.owner
		if !openIface[header] || describe(newByKey[header]).container != "interface" {
			continue
		}
		what := "method " + strings.TrimPrefix(f.key, header+" interface, ")
		switch f.member {
		case "embedded":
			what = "embedded " + f.sig
		case "unexported":
			what = "an unexported method"
		}
		breaks = append(breaks, Break{
			Kind:    Added,
			Where:   f.key,
			New:     l,
			Message: fmt.Sprintf("interface %s gained %s: types outside the package that implemented it no longer do", f.owner, what),
		})
	}
	sortBreaks(breaks)
	return breaks
}

func orLine(sig, line string) string {
	if sig == "" {
		return line
	}
	return sig
}

// CompareSlots compares the Lua scripts of two surfaces (as LuaSlots
// returns them). A caller passes KEYS and ARGV by position, so a script's
// slots must stay exactly as they were: a script of old missing from new
// is a break (Removed), and so is any difference in a script's KEYS or
// ARGV (Changed): a slot renamed, retyped into another name, reordered or
// lost, and also a slot appended at the end, since callers of the old
// shape pass one value too few. Scripts only in new are compatible. The
// breaks are sorted by Where.
func CompareSlots(old, new map[string]Slots) []Break {
	var breaks []Break
	names := make([]string, 0, len(old))
	for n := range old {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		o := old[name]
		n, ok := new[name]
		if !ok {
			breaks = append(breaks, Break{
				Kind:    Removed,
				Where:   "script " + name,
				Old:     o.String(),
				Message: fmt.Sprintf("script %s was removed", name),
			})
			continue
		}
		for _, side := range []struct {
			what     string
			old, new []string
		}{{"KEYS", o.Keys, n.Keys}, {"ARGV", o.Argv, n.Argv}} {
			if msg := slotChange(side.old, side.new); msg != "" {
				breaks = append(breaks, Break{
					Kind:    Changed,
					Where:   "script " + name + " " + side.what,
					Old:     strings.Join(side.old, ", "),
					New:     strings.Join(side.new, ", "),
					Message: fmt.Sprintf("script %s %s changed: %s", name, side.what, msg),
				})
			}
		}
	}
	sortBreaks(breaks)
	return breaks
}

// slotChange describes how the slot list new differs from old, or returns
// "" when they are equal.
func slotChange(old, new []string) string {
	var parts []string
	for i := 0; i < len(old) && i < len(new); i++ {
		if old[i] != new[i] {
			parts = append(parts, fmt.Sprintf("slot %d was %s, now %s", i+1, old[i], new[i]))
		}
	}
	if len(parts) > 0 && len(old) == len(new) && sameMultiset(old, new) {
		parts = append([]string{"reordered"}, parts...)
	}
	switch {
	case len(new) > len(old):
		parts = append(parts, fmt.Sprintf("%d slots, now %d (appended %s): callers of the old shape pass too few", len(old), len(new), strings.Join(new[len(old):], ", ")))
	case len(new) < len(old):
		parts = append(parts, fmt.Sprintf("%d slots, now %d (lost %s)", len(old), len(new), strings.Join(old[len(new):], ", ")))
	}
	return strings.Join(parts, "; ")
}

func sameMultiset(a, b []string) bool {
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, c := range count {
		if c != 0 {
			return false
		}
	}
	return true
}

func set(lines []string) map[string]bool {
	m := make(map[string]bool, len(lines))
	for _, l := range lines {
		m[l] = true
	}
	return m
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortBreaks(bs []Break) {
	sort.Slice(bs, func(i, j int) bool {
		a, b := bs[i], bs[j]
		if a.Where != b.Where {
			return a.Where < b.Where
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Old != b.Old {
			return a.Old < b.Old
		}
		return a.New < b.New
	})
}
