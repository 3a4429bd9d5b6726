package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/lang"
	"github.com/echomq/echomq/govern/langs"
	"github.com/echomq/echomq/govern/release"
)

// ReleaseOptions configure Release.
type ReleaseOptions struct {
	// Root is the checkout whose golden/releases receives the release.
	Root string
	// Manifest is the manifest to freeze.
	Manifest string
	// Witness runs the behavioural witness before freezing (the gate
	// against the newest older frozen release replays its scenarios);
	// false is an explicit opt-out, WitnessOffReason saying why.
	Witness          bool
	WitnessOffReason string
	// Addr is a scratch redis-server for the witness; empty: one is
	// started.
	Addr string
	// Judging are the gate's judging options (the waivers a reviewer
	// accepted among them), as check takes them.
	Judging compat.Options
}

// Released is what Release did: the release, the files it wrote, the
// gate's report when it ran one (nil for the first release or a version
// already frozen), and notes (a language whose SDK the root lacks).
type Released struct {
	Release *release.Release
	Written []string
	Report  *compat.Report
	Notes   []string
}

// ErrRefused is returned, with the report, when the manifest does not
// pass the gate against the newest older frozen release (the witness
// failing or not running included): nothing is frozen.
var ErrRefused = errors.New("nothing was frozen")

// Release freezes the manifest as the frozen release of its version under
// root (release.Freeze) once it passes the gate: every language's API is
// read first (a language read from its SDK's sources: when root has its
// SDK), then, when an older frozen release exists, Check runs against the
// newest of them — witness included — and a report that is not OK
// refuses the release (ErrRefused, with the report). A version already
// frozen is not gated again: freezing it writes nothing, or fails with
// release.ErrFrozen for other content.
func Release(ctx context.Context, o ReleaseOptions) (*Released, error) {
	out := &Released{}
	if o.Root == "" {
		o.Root = "."
	}
	p, err := model.Load(o.Manifest)
	if err != nil {
		return nil, err
	}
	frozen := fileExists(filepath.Join(o.Root, release.Dir, p.Version.String()+".yaml"))
	// The SDKs' APIs are read first, when the version is not frozen yet:
	// when one cannot be read, nothing is frozen.
	records := map[string][]string{}
	if !frozen {
		for _, l := range langs.All() {
			if l.FromManifest() || !l.Present(o.Root) {
				continue
			}
			lines, err := l.Read(ctx, lang.Source{Root: o.Root})
			if err != nil {
				return nil, fmt.Errorf("release records the %s SDK's API: %v; nothing was frozen", l.Title(), err)
			}
			records[l.Name()] = lines
		}
	}
	rs, err := release.List(o.Root)
	if err != nil {
		return nil, err
	}
	var prev *release.Release
	for i := range rs {
		if rs[i].Version.Compare(p.Version) < 0 {
			prev = &rs[i]
		}
	}
	if prev != nil && !frozen {
		res, err := Check(ctx, Options{Root: o.Root, Manifest: o.Manifest, Base: prev.Manifest, Judging: o.Judging, Witness: o.Witness, WitnessOffReason: o.WitnessOffReason, Addr: o.Addr})
		if err != nil {
			return nil, err
		}
		out.Report, out.Notes = res.Report, res.Notes
		if !res.Report.OK {
			return out, fmt.Errorf("%s %s does not pass check against the frozen %s; %w", o.Manifest, p.Version, prev.Version, ErrRefused)
		}
	}
	rel, written, err := release.Freeze(o.Root, o.Manifest)
	if err != nil {
		return out, err
	}
	out.Release, out.Written = &rel, written
	for _, l := range langs.All() {
		if l.FromManifest() {
			continue
		}
		lines, ok := records[l.Name()]
		switch {
		case ok && slices.Contains(written, rel.Manifest):
			// Recorded with the manifest it was released with, never
			// added to a release frozen before.
			w, err := release.FreezeRecord(rel, l, lines)
			if err != nil {
				return out, err
			}
			if w != "" {
				out.Written = append(out.Written, w)
			}
		case !ok && len(written) > 0:
			out.Notes = append(out.Notes, fmt.Sprintf("%s has no %s SDK: no %s API recorded for %s", filepath.Join(o.Root, filepath.FromSlash(l.Dir())), l.Title(), l.Title(), rel.Version))
		}
	}
	return out, nil
}

func fileExists(name string) bool {
	st, err := os.Stat(name)
	return err == nil && !st.IsDir()
}
