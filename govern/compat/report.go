package compat

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/echomq/echomq/gen/model"
)

// Report is the verdict on a change of the manifest: its findings, the
// bump they require, the bump the versions declare, and whether the
// change may land.
type Report struct {
	From    string `json:"from"`
	To      string `json:"to"`
	OldFile string `json:"old_file"`
	NewFile string `json:"new_file"`
	// NewValid is whether the new manifest validates; NewErrors are its
	// validation errors when it does not. A report over an invalid new
	// manifest never passes.
	NewValid  bool     `json:"new_valid"`
	NewErrors []string `json:"new_errors"`
	// Category is the strictness category judged: wire or wire+api.
	Category string    `json:"category"`
	Required Bump      `json:"required"`
	Declared Bump      `json:"declared"`
	OK       bool      `json:"ok"`
	Problems []string  `json:"problems"`
	Changes  []Finding `json:"changes"`
	// Witness is the behavioural witness's outcome, when it was asked for
	// (emqgen check): ran, off (an explicit opt-out), failed or skipped.
	Witness *Witness `json:"witness,omitempty"`
}

// Judge compares old with new and decides. The change may land when the
// version never decreases, no finding is invalid, the declared bump is at
// least the required one (a change that touches no wire byte, such as
// prose, may also land without a version change), and the history records
// a changed version. Every problem says what to do.
func Judge(old, new Side) (*Report, error) { return JudgeWith(old, new, Options{}) }

// JudgeWith is Judge under options: a strictness category and waivers.
// Findings outside the category and waived findings are reported but do
// not count towards the required bump; a new manifest that does not
// validate fails the report.
func JudgeWith(old, new Side, o Options) (*Report, error) {
	if o.Category == "" {
		o.Category = CategoryWireAPI
	}
	if o.Category != CategoryWire && o.Category != CategoryWireAPI {
		return nil, fmt.Errorf("category %q is not one of %s", o.Category, strings.Join(Categories, ", "))
	}
	from, err := model.ParseSemver(old.Manifest.Version.V)
	if err != nil {
		return nil, fmt.Errorf("%s: version: %v", old.File, err)
	}
	to, err := model.ParseSemver(new.Manifest.Version.V)
	if err != nil {
		return nil, fmt.Errorf("%s: version: %v", new.File, err)
	}
	var fs []Finding
	if o.Compared != nil {
		fs = slices.Clone(o.Compared)
	} else {
		fs = Compare(old, new)
	}
	fs = o.apply(fs, from, to)
	if o.Witness != nil {
		// After the waivers: the witness's findings are never waived (a
		// waiver naming one is refused, WAIVER_NOT_FOR_WITNESS).
		fs = append(fs, o.Witness.Findings...)
		sortFindings(fs)
	}
	r := &Report{From: from.String(), To: to.String(), OldFile: old.File, NewFile: new.File, NewValid: new.Invalid == nil, NewErrors: []string{}, Category: o.Category, Required: Required(fs), Changes: fs, Problems: []string{}}
	if new.Invalid != nil {
		r.NewErrors = strings.Split(strings.TrimSpace(new.Invalid.Error()), "\n")
		r.Problems = append(r.Problems, fmt.Sprintf("%s does not validate, so nothing it generates was compared; fix it first (emqgen validate %s):\n%v", new.File, new.File, new.Invalid))
	}
	if r.Changes == nil {
		r.Changes = []Finding{}
	}
	declared, up := Declared(from, to)
	r.Declared = declared
	if !up {
		r.Problems = append(r.Problems, fmt.Sprintf("the version went down from %s to %s: versions are recorded monotonically; set version to %s or higher", from, to, next(from, max(r.Required, Patch))))
	}
	for _, f := range fs {
		switch {
		case f.Bump == Invalid && f.Judged && f.Rule == WitnessScriptUncovered:
			r.Problems = append(r.Problems, fmt.Sprintf("%s %s at %s: refused at any bump — %s Add what it lacks, or undo it (%s).", f.Rule, f.Path, f.Where(), purposeOf(f.Rule), f.Message))
		case f.Bump == Invalid && f.Judged:
			r.Problems = append(r.Problems, fmt.Sprintf("%s %s at %s: refused at any bump — %s Undo it (%s).", f.Rule, f.Path, f.Where(), purposeOf(f.Rule), f.Message))
		}
	}
	switch {
	case !up:
	case declared >= r.Required:
	case declared == None && !Wire(fs):
		// Prose only: it may wait for the next release.
	default:
		var why []string
		for _, f := range fs {
			if f.Bump == r.Required && f.Counts() {
				why = append(why, f.Rule+" "+f.Path)
			}
		}
		r.Problems = append(r.Problems, fmt.Sprintf("these changes require a %s bump but %s → %s declares %s (%s): set version to %s and add its history entry, or undo them",
			r.Required, from, to, declared, strings.Join(why, ", "), next(from, r.Required)))
	}
	if o.Witness != nil {
		r.Witness = o.Witness
		if p := o.Witness.problem(); p != "" {
			r.Problems = append(r.Problems, p)
		}
	}
	if declared != None && up && !hasHistory(new, to) {
		r.Problems = append(r.Problems, fmt.Sprintf("governance.history has no entry for %s: add one with status current (and mark %s released)", to, from))
	}
	r.OK = len(r.Problems) == 0
	return r, nil
}

func hasHistory(s Side, v model.Semver) bool {
	for _, h := range s.Manifest.Governance.History {
		if hv, err := model.ParseSemver(h.Version.V); err == nil && hv == v {
			return true
		}
	}
	return false
}

// next is the version a bump of from leads to.
func next(from model.Semver, b Bump) model.Semver {
	switch b {
	case Major, Invalid:
		return model.Semver{Major: from.Major + 1}
	case Minor:
		return model.Semver{Major: from.Major, Minor: from.Minor + 1}
	case Patch:
		return model.Semver{Major: from.Major, Minor: from.Minor, Patch: from.Patch + 1}
	}
	return from
}

func purposeOf(id string) string {
	switch id {
	case WitnessBehaviourChanged:
		return WitnessBehaviourChangedPurpose
	case WitnessScriptUncovered:
		return WitnessScriptUncoveredPurpose
	case TripwireUnproven:
		return TripwireUnprovenPurpose
	}
	for _, r := range AllRules() {
		if r.ID == id {
			return r.Purpose
		}
	}
	return ""
}

// Formats are the report formats Write accepts.
var Formats = []string{"text", "markdown", "json", "github"}

// Write prints the report in a format: text (one finding per line, as a
// compiler would), markdown (a PR comment), json, or github (GitHub Actions
// workflow commands that annotate the pull request's files).
func (r *Report) Write(w io.Writer, format string) error {
	var b strings.Builder
	switch format {
	case "text":
		r.text(&b)
	case "markdown":
		r.markdown(&b)
	case "json":
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	case "github":
		r.github(&b)
	default:
		return fmt.Errorf("format %q is not one of %s", format, strings.Join(Formats, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Text is a finding as one line of text: file:line:col: bump RULE path: message.
// A waived finding ends with [waived at file:line: reason], one outside
// the judged category with [not judged: category wire].
func (f Finding) Text() string {
	return fmt.Sprintf("%s: %s %s %s: %s%s", f.Where(), f.Bump, f.Rule, f.Path, f.Message, f.note())
}

// note says why a reported finding does not count, or nothing.
func (f Finding) note() string {
	switch {
	case f.Waiver != nil:
		return fmt.Sprintf(" [waived at %s: %s]", f.Waiver.Where(), strings.TrimSpace(f.Waiver.Reason))
	case !f.Judged:
		return " [not judged: category " + CategoryWire + "]"
	}
	return ""
}

func (r *Report) verdict() string {
	n := len(r.Changes)
	s := fmt.Sprintf("%s → %s: %d change", r.From, r.To, n)
	if n != 1 {
		s += "s"
	}
	waived, unjudged := 0, 0
	for _, f := range r.Changes {
		switch {
		case f.Waiver != nil:
			waived++
		case !f.Judged:
			unjudged++
		}
	}
	if waived > 0 {
		s += fmt.Sprintf(" (%d waived)", waived)
	}
	if unjudged > 0 {
		s += fmt.Sprintf(" (%d outside category %s)", unjudged, r.Category)
	}
	s += fmt.Sprintf("; required %s, declared %s", r.Required, r.Declared)
	if r.Witness != nil {
		s += "; " + r.Witness.summary()
	}
	s += ": "
	if !r.NewValid {
		s += r.NewFile + " does not validate: "
	}
	if r.OK {
		return s + "ok"
	}
	return s + "FAIL"
}

func (r *Report) text(b *strings.Builder) {
	for _, f := range r.Changes {
		fmt.Fprintln(b, f.Text())
	}
	fmt.Fprintln(b, r.verdict())
	for _, p := range r.Problems {
		fmt.Fprintln(b, "  - "+p)
	}
	if r.Witness != nil {
		for _, n := range r.Witness.NewBehaviour {
			fmt.Fprintln(b, "  new behaviour (fails on the old bundle, not counted): "+n)
		}
		for _, n := range r.Witness.Notes {
			fmt.Fprintln(b, "  note: "+n)
		}
	}
}

// mdEscape keeps a value from breaking a Markdown table cell.
var mdEscape = strings.NewReplacer("|", `\|`, "\n", " ", "`", "'")

func (r *Report) markdown(b *strings.Builder) {
	mark := "✅"
	if !r.OK {
		mark = "❌"
	}
	fmt.Fprintf(b, "### %s EchoMQ protocol %s → %s\n\n", mark, r.From, r.To)
	fmt.Fprintf(b, "**Required bump:** %s · **declared:** %s · **category:** %s · **verdict:** ", r.Required, r.Declared, r.Category)
	if !r.NewValid {
		fmt.Fprintf(b, "`%s` does not validate, ", r.NewFile)
	}
	if r.OK {
		b.WriteString("passes the gate\n\n")
	} else {
		b.WriteString("fails the gate\n\n")
	}
	if r.Witness != nil {
		fmt.Fprintf(b, "**Behavioural witness:** %s\n\n", mdEscape.Replace(strings.TrimPrefix(r.Witness.summary(), "witness: ")))
		for _, n := range r.Witness.NewBehaviour {
			fmt.Fprintf(b, "- new behaviour (fails on the old bundle, not counted): %s\n", mdEscape.Replace(n))
		}
		for _, n := range r.Witness.Notes {
			fmt.Fprintf(b, "- note: %s\n", mdEscape.Replace(n))
		}
		if len(r.Witness.NewBehaviour)+len(r.Witness.Notes) > 0 {
			b.WriteString("\n")
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(b, "- %s\n", mdEscape.Replace(p))
	}
	if len(r.Problems) > 0 {
		b.WriteString("\n")
	}
	if len(r.Changes) == 0 {
		b.WriteString("No changes to the protocol.\n")
		return
	}
	b.WriteString("| Bump | Rule | Path | Change | Where |\n|---|---|---|---|---|\n")
	for _, f := range r.Changes {
		fmt.Fprintf(b, "| %s | `%s` | `%s` | %s | `%s` |\n", f.Bump, f.Rule, mdEscape.Replace(f.Path), mdEscape.Replace(f.Message+f.note()), f.Where())
	}
	b.WriteString("\n<sub>Generated by `emqgen diff`; rules and their purposes: docs/reviewing.md.</sub>\n")
}

// GitHub workflow commands escape their data and property values.
var (
	ghData  = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	ghProps = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

func (r *Report) github(b *strings.Builder) {
	for _, f := range r.Changes {
		level := "notice"
		if f.Bump == Invalid && f.Judged || f.Counts() && (f.Bump > r.Declared && !(r.Declared == None && !f.Wire)) {
			level = "error"
		}
		// Annotations attach to the pull request's checkout: the anchor in
		// the new manifest, which a deletion or a generated-API finding
		// also has. The change's own position, when it is elsewhere (the
		// baseline), is named in the message.
		a := f.Anchor
		if a.File == "" {
			a = Location{File: f.File, Line: f.Line, Column: f.Column}
		}
		props := []string{"file=" + ghProps.Replace(a.File), fmt.Sprintf("line=%d", max(a.Line, 1)), fmt.Sprintf("col=%d", max(a.Column, 1))}
		props = append(props, "title="+ghProps.Replace(fmt.Sprintf("%s (%s)", f.Rule, f.Bump)))
		msg := f.Path + ": " + f.Message + f.note()
		if f.File != a.File || f.Line != a.Line {
			msg += " (at " + f.Where() + ")"
		}
		fmt.Fprintf(b, "::%s %s::%s\n", level, strings.Join(props, ","), ghData.Replace(msg))
	}
	if r.OK {
		fmt.Fprintf(b, "::notice title=emqgen check::%s\n", ghData.Replace(r.verdict()))
		return
	}
	fmt.Fprintf(b, "::error title=emqgen check::%s\n", ghData.Replace(r.verdict()+"\n"+strings.Join(r.Problems, "\n")))
}
