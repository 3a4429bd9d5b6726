package compat

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/echomq/echomq/gen/model"
)

// Waiver acknowledges one finding: the rule, the manifest path and the
// version (the new side's) it is bound to, and why it is accepted. A
// waived finding is still reported, in every format, with the reason; it
// no longer counts towards the required bump. An invalid finding is never
// waived: a waiver that names one is itself an invalid finding
// (WAIVER_NOT_FOR_INVALID).
type Waiver struct {
	Rule    string `json:"rule" yaml:"rule"`
	Path    string `json:"path" yaml:"path"`
	Version string `json:"version" yaml:"version"`
	Reason  string `json:"reason" yaml:"reason"`
	// File and Line say where the waiver is written.
	File string `json:"file" yaml:"-"`
	Line int    `json:"line" yaml:"-"`
}

// Where is the waiver's file:line.
func (w Waiver) Where() string { return fmt.Sprintf("%s:%d", w.File, w.Line) }

// WaiversFile is where a repository keeps its waivers, relative to its
// root.
const WaiversFile = "govern/waivers.yaml"

// LoadWaivers reads a waivers file:
//
//	waivers:
//	  - rule: SCRIPT_SAME_REPLY
//	    path: scripts[claim].reply
//	    version: 3.0.0
//	    reason: why the change is accepted at this version
//
// A file that does not exist holds no waivers. Every waiver needs a known
// rule, a path, a version and a reason; errors name file:line.
func LoadWaivers(file string) ([]Waiver, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseWaivers(file, data)
}

// ParseWaivers decodes waivers from data; file names them.
func ParseWaivers(file string, data []byte) ([]Waiver, error) {
	var doc struct {
		Waivers []yaml.Node `yaml:"waivers"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	known := map[string]bool{WitnessBehaviourChanged: true, WitnessScriptUncovered: true}
	for _, id := range RuleIDs() {
		known[id] = true
	}
	var out []Waiver
	var problems []string
	for _, n := range doc.Waivers {
		var w Waiver
		if err := n.Decode(&w); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d:%d: %v", file, n.Line, n.Column, err))
			continue
		}
		w.File, w.Line = file, n.Line
		where := fmt.Sprintf("%s:%d:%d", file, n.Line, n.Column)
		switch {
		case !known[w.Rule]:
			problems = append(problems, fmt.Sprintf("%s: waiver of rule %q: no such rule", where, w.Rule))
		case w.Path == "":
			problems = append(problems, fmt.Sprintf("%s: waiver of %s names no path", where, w.Rule))
		case strings.TrimSpace(w.Reason) == "":
			problems = append(problems, fmt.Sprintf("%s: waiver of %s %s gives no reason", where, w.Rule, w.Path))
		default:
			if _, err := model.ParseSemver(w.Version); err != nil {
				problems = append(problems, fmt.Sprintf("%s: waiver of %s %s: version: %v", where, w.Rule, w.Path, err))
				continue
			}
			out = append(out, w)
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return out, nil
}

// waiverRules are the rules about waivers themselves.
func waiverRules() []Rule {
	return []Rule{
		{ID: "WAIVER_NOT_FOR_INVALID", Bump: Invalid, Wire: true, Purpose: "A waiver acknowledges a bump; it cannot admit a change no bump admits. The waiver is refused and the invalid finding stands."},
		{ID: "WAIVER_NOT_FOR_WITNESS", Bump: None, Purpose: "The behavioural witness's findings (WITNESS_BEHAVIOUR_CHANGED, WITNESS_SCRIPT_UNCOVERED) are what the scripts did on a live server, not a reading of the manifest: they are never waived. The waiver is refused and reported, and the witness's finding stands."},
		{ID: "WAIVER_UNUSED", Bump: None, Purpose: "A waiver bound to this version matches no finding of this comparison; it is reported so that stale waivers are seen and removed, and waives nothing."},
	}
}

// Options are how a report is judged.
type Options struct {
	// Category is CategoryWire or CategoryWireAPI (the default when
	// empty): under CategoryWire, findings of API rules are reported but
	// not judged.
	Category string
	// Waivers acknowledge findings of the versions a comparison spans
	// (each bound to the version its change ships in).
	Waivers []Waiver
	// Witness, when set, is the behavioural witness's outcome: its
	// findings count (they are never waived: a waiver naming one is
	// refused, WAIVER_NOT_FOR_WITNESS), a witness that could not run fails
	// the report, and every format states it.
	Witness *Witness
	// Compared, when not nil, is what Compare(old, new) returned for the
	// sides being judged: JudgeWith uses it rather than classifying again
	// (a caller that judges twice, without and with the witness, classifies
	// once).
	Compared []Finding
}

// apply marks the findings outside the category as not judged, attaches
// the waivers of the new version to and of the versions the comparison
// spans (above from, below to: a change accepted at 2.6.1 stays accepted
// when 2.7.0 is compared with 2.2.0) to the findings they name, and adds a finding for
// each waiver that may not apply, or that is bound to to itself and
// applies to nothing.
func (o Options) apply(fs []Finding, from, to model.Semver) []Finding {
	if o.Category == CategoryWire {
		for i := range fs {
			if fs[i].Category == CategoryAPI {
				fs[i].Judged = false
			}
		}
	}
	rules := map[string]Rule{}
	for _, r := range AllRules() {
		rules[r.ID] = r
	}
	for _, w := range o.Waivers {
		at, err := model.ParseSemver(w.Version)
		current := err == nil && at.Compare(to) == 0
		if !current && (err != nil || at.Compare(from) <= 0 || at.Compare(to) > 0) {
			continue // bound to a version the comparison does not span
		}
		w := w
		used := false
		for i := range fs {
			if fs[i].Rule != w.Rule || fs[i].Path != w.Path {
				continue
			}
			used = true
			if fs[i].Bump == Invalid {
				continue
			}
			fs[i].Waiver = &w
		}
		loc := Location{File: w.File, Line: w.Line, Column: 1}
		switch {
		case strings.HasPrefix(w.Rule, WitnessPrefix):
			r := rules["WAIVER_NOT_FOR_WITNESS"]
			fs = append(fs, Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: CategoryWire, Path: w.Path, Judged: true,
				Message: fmt.Sprintf("the waiver of %s %s (%s) is refused: the behavioural witness's findings are never waived — declare a major (or, for %s, add what the finding asks for), or undo the change", w.Rule, w.Path, strings.TrimSpace(w.Reason), WitnessScriptUncovered),
				File:    w.File, Line: w.Line, Column: 1, Anchor: loc})
		case rules[w.Rule].Bump == Invalid || used && !anyWaived(fs, w):
			r := rules["WAIVER_NOT_FOR_INVALID"]
			fs = append(fs, Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: CategoryWire, Path: w.Path, Judged: true,
				Message: fmt.Sprintf("the waiver of %s %s (%s) is refused: %s is invalid at any bump", w.Rule, w.Path, strings.TrimSpace(w.Reason), w.Rule),
				File:    w.File, Line: w.Line, Column: 1, Anchor: loc})
		case !used && current:
			r := rules["WAIVER_UNUSED"]
			fs = append(fs, Finding{Rule: r.ID, Bump: r.Bump, Wire: r.Wire, Category: CategoryWire, Path: w.Path, Judged: true,
				Message: fmt.Sprintf("the waiver of %s %s at %s matches no finding of this comparison; remove it once it is stale", w.Rule, w.Path, w.Version),
				File:    w.File, Line: w.Line, Column: 1, Anchor: loc})
		}
	}
	sortFindings(fs)
	return fs
}

func anyWaived(fs []Finding, w Waiver) bool {
	for _, f := range fs {
		if f.Waiver != nil && f.Waiver.Rule == w.Rule && f.Waiver.Path == w.Path && f.Waiver.Line == w.Line && f.Waiver.File == w.File {
			return true
		}
	}
	return false
}
