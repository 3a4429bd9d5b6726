package compat

import (
	"fmt"
	"strings"
)

// WitnessBehaviourChanged is the witness's finding: a scenario or probe of
// the baseline release fails against the new bundle, so the scripts do
// something else than they did, whatever the manifest's text says. It
// requires a major.
const WitnessBehaviourChanged = WitnessPrefix + "BEHAVIOUR_CHANGED"

// WitnessBehaviourChangedPurpose says why a witness finding requires a major.
const WitnessBehaviourChangedPurpose = "A scenario of the baseline release fails against the new bundle: deployed clients and workers rely on what the scripts did then (a refusal, a state change, a reply), so the behaviour changed whatever the declared contract says — a major, or undo the change."

// WitnessScriptUncovered is the gate's finding for a script added since
// every frozen release with nothing that exercises it: no probe step of
// the manifest runs it, or no conformance scenario sends its op. The
// witness can only replay what some scenario runs, so such a script would
// enter a release with no behaviour on record; it is refused at any bump
// until both are added.
const WitnessScriptUncovered = WitnessPrefix + "SCRIPT_UNCOVERED"

// WitnessScriptUncoveredPurpose says why an uncovered script is refused.
const WitnessScriptUncoveredPurpose = "A script enters a release with its behaviour on record: a probe step (script: <name> in a reserve member's or a wire class's probe) that runs it on a live server, and at least one conformance scenario (conformance/scenarios/*.yaml) whose steps send its op, which the release's witness then replays against every later bundle. Without them nothing would notice its behaviour change."

// UncoveredScript is the finding of a script added without a probe or a
// scenario: path is scripts[<name>], at where it is declared.
func UncoveredScript(path, message string, at Location) Finding {
	return Finding{Rule: WitnessScriptUncovered, Bump: Invalid, Wire: true, Category: CategoryWire,
		Path: path, Message: message, File: at.File, Line: at.Line, Column: max(at.Column, 1), Anchor: at, Judged: true}
}

// TripwireUnproven is the gate's finding for a tripwire added with a
// floor that the frozen releases do not bear out (govern/gate proves it
// from their manifests).
const TripwireUnproven = "TRIPWIRE_UNPROVEN"

// TripwireUnprovenPurpose says why an unproven tripwire is a major.
const TripwireUnprovenPurpose = "A tripwire refuses the scripts of older releases only if each of them reads the key with a command of its type before it writes anything (the generated guard, first in its body): a script that writes first and meets the tripwire's value afterwards has already changed the queue when it fails, and Redis does not roll it back. Every script of every frozen release from the tripwire's floor on that declares the key must begin with its guard; the releases below the floor are the ones the SDKs refuse to lay the tripwire beside (their bundle record)."

// UnprovenTripwire is the finding of a tripwire whose floor a release's
// scripts do not bear out: path is the floor's, at where it is declared.
func UnprovenTripwire(path, message string, at Location) Finding {
	return Finding{Rule: TripwireUnproven, Bump: Major, Wire: true, Category: CategoryWire,
		Path: path, Message: message, File: at.File, Line: at.Line, Column: max(at.Column, 1), Anchor: at, Judged: true}
}

// The witness's statuses.
const (
	// WitnessRan: the witness ran; its findings are in the report.
	WitnessRan = "ran"
	// WitnessOff: the reviewer opted out; the verdict says so.
	WitnessOff = "off"
	// WitnessFailed: the witness could not run (no server, no build): the
	// gate fails closed.
	WitnessFailed = "failed"
	// WitnessSkipped: the witness had nothing to run against (the new
	// manifest does not validate, so no SDK can be generated from it); the
	// report fails for that reason already.
	WitnessSkipped = "skipped"
)

// Witness is the behavioural witness's part of a verdict: the baseline
// release's conformance scenarios (and through them every probe) replayed
// against an SDK generated from the new manifest, on a real server.
type Witness struct {
	Status string `json:"status"`
	// Reason says why the witness is off, failed or skipped.
	Reason string `json:"reason,omitempty"`
	// Baseline is where the baseline's scenarios came from.
	Baseline string `json:"baseline,omitempty"`
	// Bundle is the digest of the new bundle the scenarios ran against.
	Bundle string `json:"bundle,omitempty"`
	// Cases and Passed count the baseline cases run against the new bundle.
	Cases  int `json:"cases"`
	Passed int `json:"passed"`
	// Findings are the failures, as WITNESS_BEHAVIOUR_CHANGED findings.
	Findings []Finding `json:"-"`
	// NewBehaviour lists, for a change classified additive, the new
	// scenarios that fail against the old bundle: behaviour the old bundle
	// does not have. It is reported, never counted.
	NewBehaviour []string `json:"new_behaviour"`
	// Notes say what else the witness noticed (a new scenario it could
	// not run against the old bundle).
	Notes []string `json:"notes"`
	// Remedy, for a witness that could not run, says what makes it run,
	// for the cause Reason names (a server to start, a baseline that keeps
	// a witness, a build to fix); empty: the reason says it.
	Remedy string `json:"remedy,omitempty"`
}

// Remedies of a witness that could not run, by cause.
const (
	RemedyServer  = "install redis-server (Debian: sudo apt-get install -y redis-server), or pass -addr HOST:PORT of a scratch server (it is flushed)"
	RemedyNoBase  = "check against a frozen release that keeps a witness (<version>.witness/ beside its manifest), or give -base a git ref, whose conformance scenarios are replayed"
	RemedyBuild   = "fix the Go testee's build (the error above): the witness runs the conformance scenarios through an SDK generated from the manifest"
	RemedyInvalid = "fix the baseline's manifest (the errors above)"
)

// WitnessFinding is the finding of a baseline case that fails against the
// new bundle: where the failing step is written (file, line), the case
// id, and what was expected and got.
func WitnessFinding(caseID, file string, line int, message string, anchor Location) Finding {
	return Finding{Rule: WitnessBehaviourChanged, Bump: Major, Wire: true, Category: CategoryWire,
		Path: caseID, Message: message, File: file, Line: line, Column: 1, Anchor: anchor, Judged: true}
}

// summary is the witness's clause of a verdict line.
func (w *Witness) summary() string {
	switch w.Status {
	case WitnessRan:
		s := fmt.Sprintf("witness: %d/%d baseline cases pass on the new bundle", w.Passed, w.Cases)
		if len(w.NewBehaviour) > 0 {
			s += fmt.Sprintf(", %d new scenarios fail on the old bundle (new behaviour)", len(w.NewBehaviour))
		}
		return s
	case WitnessOff:
		return "witness: OFF — " + w.Reason + "; the scripts' behaviour was not checked"
	case WitnessFailed:
		return "witness: could not run — " + w.Reason
	}
	return "witness: skipped — " + w.Reason
}

// witnessProblem is the problem a witness that could not run adds.
func (w *Witness) problem() string {
	if w.Status != WitnessFailed {
		return ""
	}
	remedy := "fix what stops it"
	if w.Remedy != "" {
		remedy = w.Remedy
	}
	return fmt.Sprintf("the behavioural witness could not run (%s), so nothing shows the scripts still behave as the baseline's did: the gate fails closed. To run it, %s; or opt out explicitly with -witness=off (the verdict then says so)", strings.TrimSpace(w.Reason), remedy)
}
