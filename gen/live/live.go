// Package live runs the manifest's probes against a live server from the
// resolved model alone: keys are built from the model's key classes, ids
// are minted with the model's id canon, scripts are the bundle gen/bundle
// renders, and version records are judged by the model's version member.
// It never imports the generated SDK, so a manifest can be checked against
// a server before, or without, generating code from it; the interpreter is
// the SDK's own (sdk/go/probe), so both print the same transcript.
//
// It is safe on a production deployment:
//
//   - every probe runs on a scratch queue of its own (ScratchPrefix and a
//     freshly minted suffix, refused when any of its keys already exists)
//     with freshly minted ids, and everything the probe wrote there is
//     deleted when it ends, passed or not;
//   - outside the scratch queue a probe touches only the reserve field that
//     names the scratch queue (the probe lock), which it releases itself
//     and which is removed afterwards if a failed probe left it;
//   - the fence's keys (the version record and the bundle identity) are
//     read, never written: the script that writes them is not run, and a
//     probe's command is sent only when the server calls it read-only or
//     every key it names belongs to the scratch queue. The one exception
//     is Options.Claim on a keyspace without a version record: the fence
//     then runs once, exactly as an SDK client runs it at connect;
//   - a keyspace fenced by another major, or whose record is not a version
//     record at all, is never fenced; its probes of the scratch queue and
//     the probe lock still run.
//
// RunFence checks the fence script itself in an empty logical database.
package live

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/probe"
)

// ScratchPrefix starts the name of every scratch queue a probe runs on; a
// minted id in lower case follows it. It is the SDK's prefix too.
const ScratchPrefix = "emqprobe-"

// MemberTarget names the probe of a reserve member in transcripts, as the
// generated SDK names it: "reserve member " and the member's key shape.
func MemberTarget(p *model.Protocol, m model.Member) string {
	return "reserve member " + p.MemberShape(m)
}

// ClassTarget names the probe of a wire class in transcripts, as the
// generated SDK names it: "wire class " and the class word.
func ClassTarget(c model.Class) string { return "wire class " + c.Word }

// Probes converts the manifest's probes into the interpreter's data:
// reserve members first, then wire classes, each in manifest order, with
// the SDK's target names.
func Probes(p *model.Protocol) []probe.Probe {
	var out []probe.Probe
	for _, m := range p.Reserve {
		out = append(out, convert(MemberTarget(p, m), m.Probe))
	}
	for _, c := range p.Classes {
		out = append(out, convert(ClassTarget(c), c.Probe))
	}
	return out
}

// The expectation kinds whose value the interpreter reads; the generated
// SDK fills exactly these, and so does convert.
const (
	expectInt    = "int"
	expectString = "string"
	expectError  = "error"
	expectFence  = "fence"
)

func convert(target string, pr model.Probe) probe.Probe {
	out := probe.Probe{Target: target, Summary: pr.Summary}
	for _, s := range pr.Steps {
		st := probe.Step{Check: s.Check, Script: s.Script, Save: s.Save}
		for _, w := range s.With {
			st.With = append(st.With, probe.Arg{Name: w.Key, Value: w.Value})
		}
		if len(s.Command) > 0 {
			st.Command = append([]string(nil), s.Command...)
		}
		st.Expect = probe.Expect{Kind: s.Expect.Kind, Element: s.Expect.Element}
		switch s.Expect.Kind {
		case expectInt:
			st.Expect.Int = s.Expect.Int
		case expectString, expectError, expectFence:
			st.Expect.String = s.Expect.String
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}

// Options adjust Run.
type Options struct {
	// Claim lets Run claim a keyspace that has no version record: the fence
	// script runs once, exactly as an SDK client runs it at connect,
	// writing this version's record and bundle digest. Without it a fresh
	// keyspace is left untouched and the version and bundle checks fail,
	// saying why. A keyspace that has a record is never fenced.
	Claim bool
	// Note receives one line for each thing worth telling besides the
	// transcript (a claim, why the fence's checks cannot pass); nil
	// discards them.
	Note func(msg string)
}

// Run reads the keyspace's version record, claims a fresh keyspace when
// opts.Claim says so, and runs every probe of the manifest (Probes), each
// on a fresh scratch queue that is deleted afterwards. The transcript has
// one line per check and ends PASS n/m; a check that fails because of the
// keyspace's record says so. The error is for what stops the run (a
// connection, a permission, cleaning up), with the transcript so far.
func Run(ctx context.Context, p *model.Protocol, rc rueidis.Client, opts Options) (*probe.Transcript, error) {
	note := opts.Note
	if note == nil {
		note = func(string) {}
	}
	m, err := newMachine(p)
	if err != nil {
		return nil, err
	}
	f := m.fence
	record, verdict, err := f.Read(ctx, rc)
	if err != nil {
		return nil, fmt.Errorf("reading the version record %s: %w", f.VersionKey, err)
	}
	if verdict == Absent && opts.Claim {
		r, err := f.Exec(ctx, rc)
		if err != nil {
			return nil, fmt.Errorf("claiming the keyspace: %w", err)
		}
		record, verdict = r.Record, f.Judge(r.Record)
		note(fmt.Sprintf("claimed the keyspace: the fence found no version record and recorded %s = %q, as an SDK client of %s does at connect", f.VersionKey, r.Record, f.Semver))
	} else if opts.Claim {
		note(fmt.Sprintf("-claim: nothing to claim, %s already holds %q; it was not fenced", f.VersionKey, record))
	}
	// why is the note; short is appended to the checks it explains.
	var why, short string
	switch verdict {
	case Absent:
		why = fmt.Sprintf("the keyspace has no version record (%s is absent) and nothing was claimed; run with -claim to claim it as an SDK client does at connect", f.VersionKey)
		short = "no version record, and without -claim nothing is claimed"
	case Behind:
		why = fmt.Sprintf("the keyspace's record %q is below %s; an SDK client of this version would raise it at connect, the prober does not", record, f.Semver)
		short = fmt.Sprintf("the keyspace is behind at %q; not raised", record)
	case Foreign:
		why = fmt.Sprintf("the keyspace belongs to another major or protocol (%s holds %q), so it was not fenced; only its scratch queues and probe lock were touched", f.VersionKey, record)
		short = fmt.Sprintf("a foreign keyspace (%q); not fenced", record)
	}
	if why != "" {
		note(why)
	}
	probes := Probes(p)
	t, err := probe.Run(ctx, probes, func(ctx context.Context) (probe.Runtime, error) { return m.open(ctx, rc) })
	if t != nil && short != "" {
		annotate(t, probes, m, short)
	}
	return t, err
}

var reservePlaceholder = regexp.MustCompile(`\$\{` + probe.KindReserve + `:([^}]*)\}`)

// annotate appends why to every failed check whose step reads or writes a
// key of the fence. Run appends exactly one result per step, in order.
func annotate(t *probe.Transcript, probes []probe.Probe, m *machine, why string) {
	i := 0
	for _, p := range probes {
		for _, s := range p.Steps {
			if i >= len(t.Results) {
				return
			}
			if r := &t.Results[i]; r.Err != nil && m.touchesFence(s) {
				r.Err = fmt.Errorf("%w (%s)", r.Err, why)
			}
			i++
		}
	}
}

// touchesFence reports whether a step names a key the fence writes.
func (m *machine) touchesFence(s probe.Step) bool {
	if sc, ok := m.scripts[s.Script]; ok && sc.fenced {
		return true
	}
	for _, c := range s.Command {
		for _, ph := range reservePlaceholder.FindAllStringSubmatch(c, -1) {
			if mem, ok := m.p.Member(ph[1]); ok && m.fence.fenced(m.memberKey(mem, "")) {
				return true
			}
		}
	}
	return false
}

// lowerKind turns an id variable (job, job2, ord) into the kind it mints.
func lowerKind(name string) string {
	return strings.ToUpper(strings.TrimRight(name, "0123456789"))
}
