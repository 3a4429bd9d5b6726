package compat

import (
	"strings"

	"github.com/echomq/echomq/govern/apirecord"
)

// TSRules are the rules that compare the TypeScript SDK's public API
// (Surface.TS). They apply when both sides carry a TypeScript API: a frozen
// release with a TypeScript record (golden/releases/<v>.ts-api.txt) and the
// working tree's sdk/ts, read with apirecord.TSAPI. A baseline without one
// compares nothing for TypeScript.
func TSRules() []Rule {
	return []Rule{
		{ID: "TS_API_NO_DELETE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: "Code written against the TypeScript SDK stops compiling when an exported name, class member or interface member it uses is gone."},
		{ID: "TS_API_SAME_SIGNATURE", Bump: Major, Wire: true, Category: CategoryAPI, Purpose: "Code written against the TypeScript SDK stops compiling, or calls with the wrong arguments, when an exported name or member changes its type or signature."},
	}
}

// compareTS judges the new side's TypeScript API against the old one's:
// each break is a finding at the recorded line that broke (old.Surface.TSFile
// when the baseline is a record), anchored at the new manifest's top. The
// features one entry point no longer exports but others still do,
// unchanged, are one TS_API_NO_DELETE finding per move (apirecord.Moved),
// path "ts: <old module> moved to <new modules>", naming every name moved,
// at the first recorded line that moved: one waiver acknowledges a move.
func compareTS(d *differ, old, new Side) []Finding {
	if old.Surface == nil || new.Surface == nil || old.Surface.TS == nil || new.Surface.TS == nil {
		return nil
	}
	rules := map[string]Rule{}
	for _, r := range TSRules() {
		rules[r.ID] = r
	}
	var out []Finding
	for _, b := range apirecord.CompareTSAPI(old.Surface.TS, new.Surface.TS) {
		r := rules["TS_API_SAME_SIGNATURE"]
		typ := func(line string) string { return strings.TrimPrefix(line, b.Where+": ") }
		var now []string
		for _, l := range strings.Split(b.New, "; "+b.Where+": ") {
			now = append(now, typ(l))
		}
		msg := "was: " + typ(b.Old) + "; now: " + strings.Join(now, " | ")
		switch b.Kind {
		case apirecord.Removed:
			r = rules["TS_API_NO_DELETE"]
			msg = "gone from the TypeScript SDK's public API (was: " + typ(b.Old) + ")"
		case apirecord.Moved:
			r = rules["TS_API_NO_DELETE"]
			msg = b.Message
		}
		f := Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: r.category(), Path: "ts: " + b.Where, Message: msg, File: new.File, Judged: true}
		f.Anchor = d.top(new.File)
		if old.Surface.TSFile != "" {
			f.File, f.Line, f.Column = old.Surface.TSFile, old.Surface.TSLines[b.Old], 1
		}
		out = append(out, f)
	}
	return out
}
