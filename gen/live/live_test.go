package live_test

import (
	"context"
	"github.com/echomq/echomq/internal/literalscan"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/live"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

const manifest = "../../protocol.yaml"

func load(t *testing.T) (*model.Protocol, *live.Fence) {
	t.Helper()
	p, err := model.Load(manifest)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	f, err := live.NewFence(p, b)
	if err != nil {
		t.Fatal(err)
	}
	return p, f
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, srv *redistest.Server) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// TestProbesMatchSDK: the probes converted from the model are the
// generated SDK's, target names included.
func TestProbesMatchSDK(t *testing.T) {
	p, _ := load(t)
	if d := cmp.Diff(emq.Probes(), live.Probes(p)); d != "" {
		t.Errorf("live.Probes differs from emq.Probes (-sdk +live):\n%s", d)
	}
}

// TestFenceMatchesSDK: the fence found in the model is the SDK's, and the
// judge agrees with CheckVersionRecord on every kind of record.
func TestFenceMatchesSDK(t *testing.T) {
	p, f := load(t)
	if f.VersionKey != emq.KeyVersion || f.BundleKey != emq.KeyBundle || f.Record != emq.VersionRecord || f.Semver != emq.Version || f.Digest != emq.BundleDigest {
		t.Fatalf("fence %+v does not match the SDK's constants", f)
	}
	v := p.Version
	records := []string{
		f.Record, "", "garbage", f.Record + " ", " " + f.Record, f.Record + "-rc.1",
		strings.TrimSuffix(f.Record, "."+strconv.Itoa(v.Patch)),
		f.RecordOf(model.Semver{Major: v.Major, Minor: v.Minor + 1}),
		f.RecordOf(model.Semver{Major: v.Major, Minor: v.Minor, Patch: v.Patch + 1}),
		f.RecordOf(model.Semver{Major: v.Major + 1}),
		f.RecordOf(model.Semver{Major: v.Major - 1, Minor: 9}),
		strings.Replace(f.Record, strconv.Itoa(v.Major)+".", "0"+strconv.Itoa(v.Major)+".", 1),
		strings.Replace(f.Record, p.Name, "other", 1),
		f.RecordOf(model.Semver{Major: v.Major, Minor: 99999999999999999}),
	}
	for _, r := range records {
		ahead, err := emq.CheckVersionRecord(r)
		got := f.Judge(r)
		admits := got == live.Current || got == live.Ahead
		if admits != (err == nil) || (got == live.Ahead) != (err == nil && ahead) {
			t.Errorf("Judge(%q) = %s; the SDK says ahead=%v err=%v", r, got, ahead, err)
		}
	}
}

// TestRunMatchesSDK runs the probes with the SDK's runtime and with the
// model's against one claimed keyspace: the transcripts are the same line
// for line, and neither leaves anything of its scratch queues behind.
func TestRunMatchesSDK(t *testing.T) {
	srv := redistest.Start(t)
	c, err := emq.Connect(ctxT(t), emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sdk, err := c.RunProbes(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := load(t)
	rc := client(t, srv)
	got, err := live.Run(ctxT(t), p, rc, live.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + got.String())
	if !got.OK() || got.String() != sdk.String() {
		t.Errorf("live transcript:\n%s\nSDK transcript:\n%s", got, sdk)
	}
	keys, err := rc.Do(ctxT(t), rc.B().Keys().Pattern("*"+live.ScratchPrefix+"*").Build()).AsStrSlice()
	if err != nil || len(keys) != 0 {
		t.Errorf("scratch keys left behind: %v (%v)", keys, err)
	}
	locks, err := rc.Do(ctxT(t), rc.B().Hkeys().Key(emq.KeyLocks).Build()).AsStrSlice()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range locks {
		if strings.Contains(l, live.ScratchPrefix) {
			t.Errorf("lock %s left behind", l)
		}
	}
}

// TestRunFenceRefusesCluster: a cluster client is refused before any
// command, since a cluster has no logical databases to run in apart.
func TestRunFenceRefusesCluster(t *testing.T) {
	srv := redistest.Start(t, redistest.WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
	if _, err := srv.Do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, _ := srv.Do("CLUSTER", "INFO")
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not come up:\n%s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rc := client(t, srv)
	if rc.Mode() != rueidis.ClientModeCluster {
		t.Fatalf("mode %v; want a cluster client", rc.Mode())
	}
	p, _ := load(t)
	if _, err := live.RunFence(ctxT(t), p, rc); err != live.ErrCluster {
		t.Fatalf("RunFence on a cluster = %v; want ErrCluster", err)
	}
	// The probes themselves run on a cluster: every script is single-slot
	// by grammar.
	tr, err := live.Run(ctxT(t), p, rc, live.Options{Claim: true})
	if err != nil || !tr.OK() {
		t.Fatalf("probes on a cluster: %v\n%s", err, tr)
	}
}

// TestNoProtocolLiterals scans the hand-written code of the prober (this
// package and the CLI command) for literals the manifest holds: class
// words, field and state names, key prefixes, kinds, reserve members, the
// version. Everything comes from the model.
func TestNoProtocolLiterals(t *testing.T) {
	p, _ := load(t)
	files, _ := filepath.Glob("*.go")
	literalscan.Scan(t, literalscan.Literals(p), append(files, "../../internal/cli/probe.go"), "take it from the model")
}

// TestEmqgenDoesNotImportTheSDK: emqgen is built from the model alone; it
// may use the probe interpreter but never the generated package.
func TestEmqgenDoesNotImportTheSDK(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goBin, "list", "-deps", "../../cmd/emqgen").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for _, d := range deps {
		if strings.HasSuffix(d, "/sdk/go/emq") {
			t.Errorf("emqgen imports %s", d)
		}
	}
	found := false
	for _, d := range deps {
		found = found || strings.HasSuffix(d, "/gen/live")
	}
	if !found {
		t.Errorf("emqgen does not use gen/live:\n%s", out)
	}
}

// minor loads the manifest as if it were the next minor (x.1.0): nothing
// else changes, so its scripts are the same and only the record differs.
func minor(t *testing.T) *model.Protocol {
	t.Helper()
	p, _ := load(t)
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	next := model.Semver{Major: p.Version.Major, Minor: p.Version.Minor + 1}
	s := strings.Replace(string(data), "\nversion: "+p.Version.String()+"\n", "\nversion: "+next.String()+"\n", 1)
	s = strings.Replace(s, "- version: "+p.Version.String()+"\n      status: current", "- version: "+next.String()+"\n      status: current", 1)
	q, err := model.Parse("minor.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	if q.Version != next {
		t.Fatalf("the bumped manifest is at %s", q.Version)
	}
	return q
}

// TestFenceChecksOfAMinor: for a version above major.0.0 the fifth check
// plants major.0.0 and sees it raised; all eight pass.
func TestFenceChecksOfAMinor(t *testing.T) {
	q := minor(t)
	srv := redistest.Start(t)
	rc := client(t, srv)
	tr, err := live.RunFence(ctxT(t), q, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + tr.String())
	b, _ := bundle.Render(q)
	f, _ := live.NewFence(q, b)
	low := f.RecordOf(model.Semver{Major: q.Version.Major})
	if !tr.OK() || len(tr.Results) != 8 || !strings.Contains(tr.Results[4].Check, low+") is raised") {
		t.Fatalf("fence checks of %s:\n%s", q.Version, tr)
	}
	if n, _ := rc.Do(ctxT(t), rc.B().Dbsize().Build()).AsInt64(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

// TestRunOnAKeyspaceBehind: a keyspace fenced by an older minor is not
// raised by the prober; the fence's checks fail saying so, the others
// pass, and the record is untouched.
func TestRunOnAKeyspaceBehind(t *testing.T) {
	q := minor(t)
	p, f := load(t)
	srv := redistest.Start(t)
	rc := client(t, srv)
	if _, err := live.Run(ctxT(t), p, rc, live.Options{Claim: true}); err != nil {
		t.Fatal(err)
	}
	var notes []string
	tr, err := live.Run(ctxT(t), q, rc, live.Options{Claim: true, Note: func(s string) { notes = append(notes, s) }})
	if err != nil {
		t.Fatal(err)
	}
	if tr.OK() || !strings.Contains(tr.String(), "behind") || len(notes) != 2 {
		t.Fatalf("a keyspace behind:\n%s\nnotes: %q", tr, notes)
	}
	fenced := map[string]bool{}
	for _, m := range q.Reserve {
		if k := q.MemberShape(m); k == f.VersionKey || k == f.BundleKey {
			fenced[live.MemberTarget(q, m)] = true
		}
	}
	for _, r := range tr.Results {
		if r.Err != nil && !fenced[r.Target] {
			t.Errorf("unexpected failure %s: %s: %v", r.Target, r.Check, r.Err)
		}
	}
	if v, _ := rc.Do(ctxT(t), rc.B().Get().Key(f.VersionKey).Build()).ToString(); v != f.Record {
		t.Errorf("the record became %q", v)
	}
}

// TestFenceChecksOfAMajorZero: for a major.0.0 version (the frozen 2.0.0
// release) nothing of the major is lower, so the fifth check plants a
// pre-release of it and sees it refused and left as found; all eight pass.
func TestFenceChecksOfAMajorZero(t *testing.T) {
	files, err := filepath.Glob("../../golden/releases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var zero *model.Protocol
	for _, file := range files {
		p, err := model.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		if p.Version.Minor == 0 && p.Version.Patch == 0 {
			zero = p
		}
	}
	if zero == nil {
		t.Fatalf("no frozen release is a major.0.0 among %v", files)
	}
	srv := redistest.Start(t)
	rc := client(t, srv)
	tr, err := live.RunFence(ctxT(t), zero, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + tr.String())
	if !tr.OK() || len(tr.Results) != 8 || !strings.Contains(tr.Results[4].Check, "pre-release") {
		t.Fatalf("fence checks of %s:\n%s", zero.Version, tr)
	}
	if n, _ := rc.Do(ctxT(t), rc.B().Dbsize().Build()).AsInt64(); n != 0 {
		t.Errorf("%d keys left", n)
	}
}
