package compat

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/manifest"
)

func selfSides(t *testing.T) (Side, Side) {
	t.Helper()
	data, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	old, err := manifest.Parse("old.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	new, err := manifest.Parse("new.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return Side{File: "old.yaml", Manifest: old}, Side{File: "new.yaml", Manifest: new}
}

func written(t *testing.T, r *Report, format string) string {
	t.Helper()
	var b strings.Builder
	if err := r.Write(&b, format); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A witness finding counts like a rule's: it requires a major and fails a
// change declared lower; it is never waived (a waiver naming it is
// understood, and refused with WAIVER_NOT_FOR_WITNESS).
func TestWitnessFindingCounts(t *testing.T) {
	old, new := selfSides(t)
	f := WitnessFinding("scenarios/refusals/complete-token", "w/refusals.yaml", 145, "expected error, got result {}", Location{File: "new.yaml", Line: 1, Column: 1})
	w := &Witness{Status: WitnessRan, Cases: 10, Passed: 9, Findings: []Finding{f}}
	r, err := JudgeWith(old, new, Options{Witness: w, Waivers: []Waiver{{Rule: WitnessBehaviourChanged, Path: f.Path, Version: new.Manifest.Version.V, Reason: "no"}}})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK || r.Required != Major || len(r.Changes) == 0 || r.Changes[0].Rule != WitnessBehaviourChanged || r.Changes[0].Waiver != nil {
		t.Errorf("report with a witness finding: ok %v required %s changes %+v", r.OK, r.Required, r.Changes)
	}
	refused := false
	for _, c := range r.Changes {
		refused = refused || c.Rule == "WAIVER_NOT_FOR_WITNESS" && c.Path == f.Path
	}
	if !refused {
		t.Errorf("the waiver naming %s was not refused with WAIVER_NOT_FOR_WITNESS: %+v", WitnessBehaviourChanged, r.Changes)
	}
	if _, err := ParseWaivers("w.yaml", []byte("waivers:\n  - {rule: "+WitnessBehaviourChanged+", path: "+f.Path+", version: 2.2.0, reason: a test}\n")); err != nil {
		t.Errorf("a waiver naming %s: %v; want it understood", WitnessBehaviourChanged, err)
	}
	if out := written(t, r, "text"); !strings.Contains(out, "w/refusals.yaml:145:1: major WITNESS_BEHAVIOUR_CHANGED scenarios/refusals/complete-token") || !strings.Contains(out, "witness: 9/10 baseline cases pass") {
		t.Errorf("text report:\n%s", out)
	}
}

// The opt-out passes but is stated in every format; a witness that could
// not run fails closed in every format.
func TestWitnessStatusInEveryFormat(t *testing.T) {
	old, new := selfSides(t)
	for _, tc := range []struct {
		w    *Witness
		ok   bool
		want map[string]string
	}{
		{&Witness{Status: WitnessOff, Reason: "opted out with -witness=off"}, true, map[string]string{
			"text": "witness: OFF — opted out with -witness=off", "markdown": "**Behavioural witness:** OFF", "github": "witness: OFF", "json": `"status": "off"`}},
		{&Witness{Status: WitnessFailed, Reason: "no redis-server"}, false, map[string]string{
			"text": "the gate fails closed", "markdown": "the gate fails closed", "github": "::error title=emqgen check::", "json": `"status": "failed"`}},
	} {
		r, err := JudgeWith(old, new, Options{Witness: tc.w})
		if err != nil {
			t.Fatal(err)
		}
		if r.OK != tc.ok {
			t.Errorf("witness %s: ok %v, want %v (%v)", tc.w.Status, r.OK, tc.ok, r.Problems)
		}
		for _, format := range Formats {
			out := written(t, r, format)
			if !strings.Contains(out, tc.want[format]) {
				t.Errorf("witness %s, -format %s does not say %q:\n%s", tc.w.Status, format, tc.want[format], out)
			}
			if format == "json" {
				var raw map[string]any
				if err := json.Unmarshal([]byte(out), &raw); err != nil || raw["witness"] == nil {
					t.Errorf("json report has no witness: %v", err)
				}
			}
		}
	}
	// Without a witness (emqgen diff) the report says nothing of it.
	r, _ := Judge(old, new)
	if out := written(t, r, "text"); strings.Contains(out, "witness") {
		t.Errorf("a report without a witness mentions one:\n%s", out)
	}
}
