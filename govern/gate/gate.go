// Package gate is emqgen's protocol gate as a library: the change from a
// baseline to the manifest under review, judged once. Check resolves the
// baseline once (the newest frozen release, a frozen release or manifest
// named by its file, or the manifest at a git ref: its manifest, its API
// records of every language that lie beside it, its witness), reads the
// working tree's API records that the baseline keeps (every language of
// govern/langs), classifies the change once (govern/compat), runs the
// behavioural witness in this process (govern/witness: the conformance
// runner as a library, on a redis-server it starts), asks every script
// added for its probe and scenario, and returns the report. Release
// freezes a manifest once it passes the gate, witness included.
//
// Nothing here assumes where the program runs from: every path is the
// checkout's (Options.Root: the directory of its protocol.yaml, its
// golden/releases, its SDKs and conformance suite), so an installed
// emqgen gates any checkout.
package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/lang"
	"github.com/echomq/echomq/govern/langs"
	"github.com/echomq/echomq/govern/release"
	"github.com/echomq/echomq/govern/witness"
)

// Options configure Check.
type Options struct {
	// Root is the checkout: where golden/releases, the SDKs and the
	// conformance suite live.
	Root string
	// Manifest is the manifest under review.
	Manifest string
	// Base is the baseline: "" (the newest frozen release under Root), a
	// manifest file, or a git ref.
	Base string
	// Judging is the strictness category and the waivers.
	Judging compat.Options
	// Witness runs the behavioural witness; false is the explicit opt-out
	// the verdict states (WitnessOffReason).
	Witness bool
	// WitnessOffReason says why the witness is off, for the verdict.
	WitnessOffReason string
	// Addr is a scratch redis-server for the witness (it is flushed);
	// empty: the witness starts one.
	Addr string
	// Log, when set, receives the witness's progress.
	Log io.Writer
}

// Result is a check's outcome: the report and the notes a reader should
// see beside it (what was not compared, and why).
type Result struct {
	Report *compat.Report
	Notes  []string
}

// Check runs the gate. An error is bad input or a tool that cannot run
// (a baseline that cannot be read, an SDK whose API cannot be read); a
// change that fails the gate is a report that is not OK.
func Check(ctx context.Context, o Options) (*Result, error) {
	res := &Result{}
	notef := func(format string, a ...any) { res.Notes = append(res.Notes, fmt.Sprintf(format, a...)) }
	if o.Root == "" {
		o.Root = "."
	}
	if o.Judging.Category == "" {
		o.Judging.Category = compat.CategoryWireAPI
	}
	old, err := Resolve(o.Root, o.Base, o.Manifest, notef)
	if err != nil {
		return nil, err
	}
	defer old.Close()
	new, np, err := readSide(o.Root, o.Manifest)
	if err != nil {
		return nil, err
	}
	// The witness's testee is built (or found in its cache) while the
	// SDKs' APIs are read: on a cold cache both take seconds, and the
	// witness's own Build then finds it built.
	prebuilt := make(chan struct{})
	if o.Witness && np != nil {
		go func() {
			defer close(prebuilt)
			_, _, _ = witness.Build(ctx, o.Root, np, "")
		}()
	} else {
		close(prebuilt)
	}
	defer func() { <-prebuilt }()
	if o.Judging.Category == compat.CategoryWire {
		// API findings are not judged under -category wire: the SDKs
		// whose records are read from their sources are not read (so
		// neither their tools nor their sources are needed).
		var titles []string
		for _, l := range langs.All() {
			if !l.FromManifest() {
				titles = append(titles, l.Title())
			}
		}
		notef("-category %s judges the wire only: the %s SDKs' APIs are not read", compat.CategoryWire, and(titles))
	} else if err := readRecords(ctx, o.Root, old, new, notef); err != nil {
		return nil, err
	}
	// One classification; the report is decided from it twice, cheaply:
	// once without the witness (is the change additive?), once with.
	if o.Judging.Compared = compat.Compare(old.Side, *new); o.Judging.Compared == nil {
		o.Judging.Compared = []compat.Finding{}
	}
	first, err := compat.JudgeWith(old.Side, *new, o.Judging)
	if err != nil {
		return nil, err
	}
	if !o.Witness {
		o.Judging.Witness = &compat.Witness{Status: compat.WitnessOff, Reason: o.WitnessOffReason, NewBehaviour: []string{}, Notes: []string{}}
	} else {
		<-prebuilt
		o.Judging.Witness = runWitness(ctx, o, old, new, np, first.Required == compat.Minor)
	}
	if new.Invalid == nil {
		fs, err := coverage(o.Root, &old.Side, new)
		if errors.Is(err, errNoSuite) {
			notef("%s has no %s, so the scripts added since %s are not asked for their probes and scenarios", o.Root, scenariosDir, old.Side.Manifest.Version.V)
			err = nil
		}
		if err != nil {
			return nil, err
		}
		o.Judging.Witness.Findings = append(o.Judging.Witness.Findings, fs...)
		tw, err := tripwires(o.Root, &old.Side, new)
		if err != nil {
			return nil, err
		}
		o.Judging.Witness.Findings = append(o.Judging.Witness.Findings, tw...)
	}
	if res.Report, err = compat.JudgeWith(old.Side, *new, o.Judging); err != nil {
		return nil, err
	}
	return res, nil
}

// readSide loads the manifest under review: its side (with its validation
// error as Invalid when it does not validate) and its model (nil then).
func readSide(root, file string) (*compat.Side, *model.Protocol, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	return sideOf(root, file, data, nil)
}

// readRecords gives the new side the working tree's API record of every
// language that is read from its SDK's sources and that the baseline
// keeps; a language the baseline keeps no record of is noted and not
// compared.
func readRecords(ctx context.Context, root string, old *Baseline, new *compat.Side, notef func(string, ...any)) error {
	for _, l := range langs.All() {
		if l.FromManifest() {
			continue
		}
		rec := old.Side.Surface.Record(l.Name())
		if rec == nil {
			label := old.Label
			if old.Release != nil {
				label += " (no " + old.Release.RecordFile(l) + ")"
			}
			notef("%s records no %s API, so the %s SDK's API is not compared", label, l.Title(), l.Title())
			continue
		}
		if new.Surface == nil {
			continue // the new manifest does not validate: its artifacts are not compared
		}
		dir := filepath.Join(root, filepath.FromSlash(l.Dir()))
		if !l.Present(root) {
			return fmt.Errorf("the baseline records a %s API (%s), but %s has no %s SDK to compare it with", l.Title(), rec.File, dir, l.Title())
		}
		lines, err := l.Read(ctx, lang.Source{Root: root})
		if err != nil {
			return fmt.Errorf("the baseline records a %s API (%s), so check compares %s's: %v", l.Title(), rec.File, dir, err)
		}
		new.Surface.SetRecord(l.Name(), &compat.Record{Lines: lines})
	}
	return nil
}

// runWitness runs the behavioural witness of a check: the baseline's
// scenarios against the new manifest's SDK, and for an additive change
// today's scenarios against the baseline's.
func runWitness(ctx context.Context, o Options, old *Baseline, new *compat.Side, np *model.Protocol, additive bool) *compat.Witness {
	w := func(status, format string, a ...any) *compat.Witness {
		return &compat.Witness{Status: status, Reason: fmt.Sprintf(format, a...), NewBehaviour: []string{}, Notes: []string{}}
	}
	if new.Invalid != nil || np == nil {
		return w(compat.WitnessSkipped, "%s does not validate, so no SDK can be generated from it", o.Manifest)
	}
	src, err := old.witness()
	if err != nil {
		f := w(compat.WitnessFailed, "%v", err)
		f.Remedy = compat.RemedyNoBase
		return f
	}
	op, err := model.Load(src.manifest)
	if err != nil {
		f := w(compat.WitnessFailed, "the baseline %s does not validate: %v", src.manifest, err)
		f.Remedy = compat.RemedyInvalid
		return f
	}
	also, err := newerWitness(o.Root, op.Version, np.Version)
	if err != nil {
		return w(compat.WitnessFailed, "%v", err)
	}
	return witness.Run(ctx, witness.Options{
		Root: o.Root, New: witness.Side{File: o.Manifest, Protocol: np}, Old: witness.Side{File: src.manifest, Protocol: op},
		Baseline: src.scenarios, BaselineLabel: src.label, Also: also, Additive: additive, Addr: o.Addr, Log: o.Log,
	})
}

// newerWitness is the witness of the newest frozen release under root
// that is newer than the baseline's version and older than the new one:
// checked against an older baseline (-base golden/releases/2.0.0.yaml), a
// change must still keep what the releases since put on record — a
// script added after the baseline has its behaviour in their witnesses
// only. None when the baseline is that release or newer.
func newerWitness(root string, base, new model.Semver) ([]witness.Replay, error) {
	rs, err := release.List(root)
	if err != nil {
		return nil, err
	}
	for i := len(rs) - 1; i >= 0; i-- {
		r := rs[i]
		if r.Version.Compare(new) >= 0 {
			continue
		}
		if r.Version.Compare(base) <= 0 || !r.HasWitness() {
			return nil, nil
		}
		return []witness.Replay{{Dir: r.WitnessScenarios(), Label: "the frozen release " + r.Version.String(), Short: r.Version.String()}}, nil
	}
	return nil, nil
}

// and joins names as prose: "A", "A and B", "A, B and C".
func and(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
