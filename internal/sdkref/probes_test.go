package sdkref_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/probe"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// modelProbes converts the manifest's probes into the interpreter's data
// straight from the model: reserve members first, then wire classes, each
// in manifest order, named "reserve member <key shape>" and "wire class
// <word>". It is the reference the generated Probes is checked against.
func modelProbes(p *model.Protocol) []probe.Probe {
	var out []probe.Probe
	conv := func(target string, pr model.Probe) probe.Probe {
		o := probe.Probe{Target: target, Summary: pr.Summary}
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
			case "int":
				st.Expect.Int = s.Expect.Int
			case "string", "error", "fence":
				st.Expect.String = s.Expect.String
			}
			o.Steps = append(o.Steps, st)
		}
		return o
	}
	for _, m := range p.Reserve {
		out = append(out, conv("reserve member "+p.MemberShape(m), m.Probe))
	}
	for _, c := range p.Classes {
		out = append(out, conv("wire class "+c.Word, c.Probe))
	}
	return out
}

// TestProbesMatchModel: the generated probes are the manifest's, target
// names included.
func TestProbesMatchModel(t *testing.T) {
	if d := cmp.Diff(modelProbes(reference(t)), wire.Probes()); d != "" {
		t.Errorf("emq.Probes differs from the manifest's probes (-model +sdk):\n%s", d)
	}
}

// TestFenceMatchesModel: the fence's keys, record, version and digest are
// the manifest's, and the SDK's judge agrees with the manifest's version
// order on records of every release in its history and around this one.
func TestFenceMatchesModel(t *testing.T) {
	p := reference(t)
	b, err := bundle.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	vm, _ := p.Member("version")
	bm, _ := p.Member("bundle")
	if p.MemberShape(vm) != wire.KeyVersion || p.MemberShape(bm) != wire.KeyBundle || p.VersionRecord() != wire.VersionRecord || p.Version.String() != emq.Version || b.Digest != wire.BundleDigest {
		t.Fatalf("the SDK's fence constants differ from the manifest's")
	}
	v := p.Version
	vers := []model.Semver{v, {Major: v.Major, Minor: v.Minor + 1}, {Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}, {Major: v.Major + 1}, {Major: v.Major}}
	if v.Major > 0 {
		vers = append(vers, model.Semver{Major: v.Major - 1, Minor: 9})
	}
	for _, h := range p.Governance.History {
		vers = append(vers, h.Version)
	}
	for _, o := range vers {
		rec := model.FillVersion(vm.Value, o)
		want := emq.VersionForeign
		if o.Major == v.Major {
			want = map[int]emq.Verdict{-1: emq.VersionBehind, 0: emq.VersionCurrent, 1: emq.VersionAhead}[o.Compare(v)]
		}
		if got := emq.JudgeVersionRecord(rec); got != want {
			t.Errorf("JudgeVersionRecord(%q) = %s; the manifest's order says %s", rec, got, want)
		}
	}
}

// TestFenceRefusesEveryOtherMajorOfTheHistory: the fence script refuses
// the record of every release of another major in the manifest's history
// (such as the frozen last release of an earlier line) and leaves both
// fence keys byte for byte as found.
func TestFenceRefusesEveryOtherMajorOfTheHistory(t *testing.T) {
	p := reference(t)
	vm, _ := p.Member("version")
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	others := 0
	for _, h := range p.Governance.History {
		if h.Version.Major == p.Version.Major {
			continue
		}
		others++
		rec := model.FillVersion(vm.Value, h.Version)
		if _, err := srv.Do("SET", wire.KeyVersion, rec); err != nil {
			t.Fatal(err)
		}
		before, _ := srv.Do("DUMP", wire.KeyVersion)
		call := wire.FenceCall{VersionKey: wire.KeyVersion, BundleKey: wire.KeyBundle, Version: wire.VersionRecord, Semver: emq.Version, Bundle: wire.BundleDigest}
		r, err := call.Exec(ctx, rc)
		if err != nil || r.Version != rec || r.Bundle != "" {
			t.Errorf("the fence on %q answered %+v, %v; want it refused", rec, r, err)
		}
		after, _ := srv.Do("DUMP", wire.KeyVersion)
		if n, _ := srv.Do("EXISTS", wire.KeyBundle); before != after || n != "0" {
			t.Errorf("the fence changed a keyspace of %s", h.Version)
		}
	}
	if others == 0 {
		t.Log("the history holds no other major")
	}
}
