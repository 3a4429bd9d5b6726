package live

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/probe"
)

// Verdict is what this version's fence makes of a keyspace's version
// record, judged by the same rules as the SDK's CheckVersionRecord.
type Verdict int

// The verdicts.
const (
	Absent  Verdict = iota // there is no record: a fresh keyspace
	Current                // the record is this version
	Ahead                  // a higher minor or patch of this major: admitted
	Behind                 // a lower minor or patch of this major: the fence raises it, the judge refuses it until then
	Foreign                // another major, another protocol, or not a version record at all: refused, never written
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case Absent:
		return "absent"
	case Current:
		return "current"
	case Ahead:
		return "ahead"
	case Behind:
		return "behind"
	case Foreign:
		return "foreign"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Fence is the manifest's version fence, found in the model: the reserve
// member that holds the version record, the script that writes it (the
// fence script), the script's other reserve key (the bundle identity), and
// this protocol's version record, semver and bundle digest.
type Fence struct {
	Script     string // the fence script's name
	Target     string // the name of the fence checks in transcripts: "script " and the script's name
	VersionKey string // the version record's key
	BundleKey  string // the bundle identity's key
	Record     string // this version's record
	Semver     string // this version, major.minor.patch
	Digest     string // this bundle's digest

	version  model.Semver
	template string // the version member's value template
	recordRE *regexp.Regexp
	holes    []string // the template's holes, in order
	keys     []string // the fence script's KEYS
	argv     []string // the fence script's ARGV
	recAt    int      // the reply element holding the record
	bundleAt int      // the reply element holding the digest
	lua      *rueidis.Lua
}

// The version record template's holes, as model.FillVersion fills them.
const (
	holeMajor = "major"
	holeMinor = "minor"
	holePatch = "patch"
)

var versionHoleRE = regexp.MustCompile(`<(` + holeMajor + `|` + holeMinor + `|` + holePatch + `)>`)

// NewFence finds the fence in the model. The version member is the one
// whose value template yields the protocol's version record; the fence
// script is the script with that member among its KEYS; its ARGV and reply
// elements are named after the probe vocabulary (version, semver, bundle),
// which is how the prober fills and reads them.
func NewFence(p *model.Protocol, b *bundle.Bundle) (*Fence, error) {
	f := &Fence{Record: p.VersionRecord(), Semver: p.Version.String(), Digest: b.Digest, version: p.Version}
	var vm *model.Member
	for i, m := range p.Reserve {
		if m.Value != "" && model.FillVersion(m.Value, p.Version) == f.Record {
			vm = &p.Reserve[i]
			break
		}
	}
	if vm == nil {
		return nil, errors.New("live: no reserve member holds the version record")
	}
	f.template = vm.Value
	f.VersionKey = p.MemberShape(*vm)
	for i, s := range p.Scripts {
		writes := false
		var others []string
		var keys []string
		for _, k := range s.Keys {
			if k.Type != slotReserve {
				continue
			}
			m, _ := p.Member(k.Member)
			keys = append(keys, p.MemberShape(m))
			if m.Name == vm.Name {
				writes = true
			} else {
				others = append(others, p.MemberShape(m))
			}
		}
		if !writes {
			continue
		}
		if f.Script != "" {
			return nil, fmt.Errorf("live: scripts %s and %s both take %s; which is the fence?", f.Script, s.Name, f.VersionKey)
		}
		if len(others) != 1 || len(keys) != len(s.Keys) {
			return nil, fmt.Errorf("live: the fence script %s must take the version record and exactly one other reserve key, the bundle identity", s.Name)
		}
		f.Script, f.BundleKey, f.keys = s.Name, others[0], keys
		f.Target = "script " + s.Name
		f.lua = rueidis.NewLuaScript(b.Scripts[i].Source)
		vocab := map[string]string{probe.VarVersion: f.Record, probe.VarSemver: f.Semver, probe.VarBundle: f.Digest}
		for _, a := range s.Argv {
			v, ok := vocab[a.Name]
			if !ok {
				return nil, fmt.Errorf("live: the fence script's argument %q is not one the prober can fill (%s, %s, %s)", a.Name, probe.VarVersion, probe.VarSemver, probe.VarBundle)
			}
			f.argv = append(f.argv, v)
		}
		f.recAt, f.bundleAt = -1, -1
		for j, e := range s.Reply.Elements {
			switch e.Name {
			case probe.VarVersion:
				f.recAt = j
			case probe.VarBundle:
				f.bundleAt = j
			}
		}
		if f.recAt < 0 || f.bundleAt < 0 {
			return nil, fmt.Errorf("live: the fence script's reply must name the elements %s and %s", probe.VarVersion, probe.VarBundle)
		}
	}
	if f.Script == "" {
		return nil, fmt.Errorf("live: no script takes the version record %s", f.VersionKey)
	}
	pat := "^"
	last := 0
	for _, loc := range versionHoleRE.FindAllStringSubmatchIndex(f.template, -1) {
		pat += regexp.QuoteMeta(f.template[last:loc[0]]) + `(0|[1-9][0-9]*)`
		f.holes = append(f.holes, f.template[loc[2]:loc[3]])
		last = loc[1]
	}
	f.recordRE = regexp.MustCompile(pat + regexp.QuoteMeta(f.template[last:]) + "$")
	return f, nil
}

// fenced reports whether key is one the fence writes.
func (f *Fence) fenced(key string) bool { return key == f.VersionKey || key == f.BundleKey }

// RecordOf is the version record of v: the version member's template
// filled in.
func (f *Fence) RecordOf(v model.Semver) string { return model.FillVersion(f.template, v) }

// Parse reads a version record; ok is false when record is not one.
func (f *Fence) Parse(record string) (v model.Semver, ok bool) {
	m := f.recordRE.FindStringSubmatch(record)
	if m == nil {
		return model.Semver{}, false
	}
	for i, h := range f.holes {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return model.Semver{}, false
		}
		switch h {
		case holeMajor:
			v.Major = n
		case holeMinor:
			v.Minor = n
		case holePatch:
			v.Patch = n
		}
	}
	return v, true
}

// Judge is this version's verdict on a record found in a keyspace. It
// follows the SDK's CheckVersionRecord: another major, another prefix or a
// value that is not a record is Foreign; within the major a record is
// Current, Ahead or Behind by minor, then patch.
func (f *Fence) Judge(record string) Verdict {
	v, ok := f.Parse(record)
	if !ok || v.Major != f.version.Major {
		return Foreign
	}
	switch v.Compare(f.version) {
	case 1:
		return Ahead
	case -1:
		return Behind
	}
	return Current
}

// Read reads the keyspace's version record and judges it, writing
// nothing. A record of another Redis type is Foreign, with the server's
// answer as the record.
func (f *Fence) Read(ctx context.Context, rc rueidis.Client) (string, Verdict, error) {
	s, err := rc.Do(ctx, rc.B().Get().Key(f.VersionKey).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return "", Absent, nil
	case err != nil:
		if re, ok := rueidis.IsRedisErr(err); ok && !re.IsNil() && strings.HasPrefix(re.Error(), "WRONGTYPE") {
			return re.Error(), Foreign, nil
		}
		return "", Absent, err
	}
	return s, f.Judge(s), nil
}

// FenceReply is what the fence script answers.
type FenceReply struct {
	Record   string // the version record after the fence
	Bundle   string // the digest recorded for this version, when Recorded
	Recorded bool   // false when the fence refused the keyspace
}

// Exec runs the fence script once, as an SDK client does at connect: it
// claims a fresh keyspace, raises a lower version of this major, records
// the bundle digest for this version unless one is recorded, and answers
// what it found. The prober calls it only to claim a keyspace that has no
// record (Options.Claim) and inside RunFence's empty database.
func (f *Fence) Exec(ctx context.Context, rc rueidis.Client) (FenceReply, error) {
	arr, err := f.lua.Exec(ctx, rc, f.keys, f.argv).ToArray()
	if err != nil {
		return FenceReply{}, err
	}
	if len(arr) <= f.recAt || len(arr) <= f.bundleAt {
		return FenceReply{}, fmt.Errorf("the fence answered %d elements", len(arr))
	}
	var r FenceReply
	if r.Record, err = arr[f.recAt].ToString(); err != nil {
		return FenceReply{}, fmt.Errorf("the fence's record: %w", err)
	}
	if s, err := arr[f.bundleAt].ToString(); err == nil {
		r.Bundle, r.Recorded = s, true
	}
	return r, nil
}

// ErrNotEmpty means RunFence's database holds keys; it was not touched.
var ErrNotEmpty = errors.New("the fence database is not empty")

// ErrCluster means RunFence was given a Redis Cluster client: a cluster has
// no logical databases (no SELECT), so there is no empty one to use.
var ErrCluster = errors.New("Redis Cluster has no logical databases (SELECT), so the fence checks cannot run apart from the data")

// RunFence runs the fence's eight checks with rc, which must be connected
// to an empty logical database of a standalone server (it is refused with
// ErrNotEmpty otherwise, untouched): a fresh keyspace has no record; the
// fence claims it; the record reads back; a second fence changes nothing;
// a lower record of this major is raised (for a major.0.0 version nothing
// is lower but a pre-release of it, which is not a record: it is refused
// and left as found); a higher minor is admitted as ahead and not lowered;
// other majors are refused and left byte for byte; the digest is recorded
// for this version and a planted foreign digest is reported back, not
// overwritten. Everything the checks wrote is deleted afterwards.
func RunFence(ctx context.Context, p *model.Protocol, rc rueidis.Client) (*probe.Transcript, error) {
	if rc.Mode() == rueidis.ClientModeCluster {
		return nil, ErrCluster
	}
	b, err := bundle.Render(p)
	if err != nil {
		return nil, err
	}
	f, err := NewFence(p, b)
	if err != nil {
		return nil, err
	}
	n, err := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64()
	if err != nil {
		return nil, fmt.Errorf("counting the fence database's keys: %w", err)
	}
	if n != 0 {
		return nil, fmt.Errorf("%w: it holds %d key(s); give -fence-db a database nobody uses", ErrNotEmpty, n)
	}
	c := &fenceChecks{f: f, rc: rc}
	last := map[int]model.Semver{}
	for _, h := range p.Governance.History {
		if l, ok := last[h.Version.Major]; !ok || h.Version.Compare(l) > 0 {
			last[h.Version.Major] = h.Version
		}
	}
	for _, h := range p.Governance.History {
		if last[h.Version.Major] == h.Version {
			c.history = append(c.history, h.Version)
		}
	}
	t := &probe.Transcript{}
	for _, ch := range c.checks() {
		err := ch.run(ctx)
		t.Results = append(t.Results, probe.Result{Target: f.Target, Check: ch.check, Err: err})
	}
	if err := c.reset(ctx); err != nil {
		return t, fmt.Errorf("cleaning up the fence database: %w", err)
	}
	return t, nil
}

// fenceChecks are the eight checks over one fence and one database.
type fenceChecks struct {
	f       *Fence
	rc      rueidis.Client
	history []model.Semver // the last release of each major in the manifest's history
}

type fenceCheck struct {
	check string
	run   func(ctx context.Context) error
}

func (c *fenceChecks) checks() []fenceCheck {
	f := c.f
	v := f.version
	base := model.Semver{Major: v.Major}
	ahead := model.Semver{Major: v.Major, Minor: v.Minor + 1}
	lower := fenceCheck{
		check: fmt.Sprintf("a lower version of this major (%s) is raised to this version", f.RecordOf(base)),
		run:   func(ctx context.Context) error { return c.raised(ctx, f.RecordOf(base)) },
	}
	if v == base {
		// Nothing of this major is lower than major.0.0 but a pre-release
		// of it, and a pre-release is not a version record: the fence must
		// refuse it rather than raise it, and leave it as found.
		pre := f.Record + "-rc.1"
		lower = fenceCheck{
			check: fmt.Sprintf("nothing of this major is lower than %s but a pre-release (%s), which is refused, not raised, and left as found", f.Semver, pre),
			run:   func(ctx context.Context) error { return c.refused(ctx, pre) },
		}
	}
	// The next major, and the last release of every other major in the
	// manifest's history (such as a frozen earlier line).
	others := []string{f.RecordOf(model.Semver{Major: v.Major + 1})}
	for _, h := range c.history {
		if h.Major != v.Major {
			others = append(others, f.RecordOf(h))
		}
	}
	return []fenceCheck{
		{"a fresh keyspace has no version record", c.fresh},
		{fmt.Sprintf("the fence claims a fresh keyspace with %s", f.Record), c.claims},
		{"reading back gives this version record", c.readBack},
		{"a second fence admits it and leaves the record unchanged", c.again},
		lower,
		{fmt.Sprintf("a higher minor (%s) is admitted as ahead and never lowered", f.RecordOf(ahead)), func(ctx context.Context) error { return c.ahead(ctx, f.RecordOf(ahead)) }},
		{fmt.Sprintf("another major (%s) is refused and left exactly as found", strings.Join(others, ", ")), func(ctx context.Context) error {
			for _, o := range others {
				if err := c.refused(ctx, o); err != nil {
					return err
				}
			}
			return nil
		}},
		{fmt.Sprintf("the bundle digest is recorded for %s and a planted foreign digest is reported back, not overwritten", f.Semver), c.digest},
	}
}

func (c *fenceChecks) do(ctx context.Context, args ...string) rueidis.RedisResult {
	return c.rc.Do(ctx, c.rc.B().Arbitrary(args...).Build())
}

// reset deletes both keys of the fence.
func (c *fenceChecks) reset(ctx context.Context) error {
	for _, k := range []string{c.f.VersionKey, c.f.BundleKey} {
		if err := c.rc.Do(ctx, c.rc.B().Del().Key(k).Build()).Error(); err != nil {
			return err
		}
	}
	return nil
}

// record reads the version record; "" when there is none.
func (c *fenceChecks) record(ctx context.Context) (string, error) {
	s, err := c.rc.Do(ctx, c.rc.B().Get().Key(c.f.VersionKey).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", nil
	}
	return s, err
}

// digestOf reads the digest recorded for this version; "" when none.
func (c *fenceChecks) digestOf(ctx context.Context) (string, error) {
	s, err := c.rc.Do(ctx, c.rc.B().Hget().Key(c.f.BundleKey).Field(c.f.Semver).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", nil
	}
	return s, err
}

// dump is the serialized value of both fence keys ("" for an absent key).
func (c *fenceChecks) dump(ctx context.Context) ([2]string, error) {
	var out [2]string
	for i, k := range []string{c.f.VersionKey, c.f.BundleKey} {
		s, err := c.rc.Do(ctx, c.rc.B().Dump().Key(k).Build()).ToString()
		if err != nil && !rueidis.IsRedisNil(err) {
			return out, err
		}
		out[i] = s
	}
	return out, nil
}

// plant resets the fence's keys and sets the version record to record.
func (c *fenceChecks) plant(ctx context.Context, record string) error {
	if err := c.reset(ctx); err != nil {
		return err
	}
	return c.rc.Do(ctx, c.rc.B().Set().Key(c.f.VersionKey).Value(record).Build()).Error()
}

// admitted checks a fence reply that should admit the keyspace at record
// with this bundle, and the record the keyspace holds.
func (c *fenceChecks) admitted(ctx context.Context, r FenceReply, record string) error {
	if r.Record != record {
		return fmt.Errorf("the fence answered the record %q, want %q", r.Record, record)
	}
	if !r.Recorded || r.Bundle != c.f.Digest {
		return fmt.Errorf("the fence answered the digest %q (recorded %v), want %q", r.Bundle, r.Recorded, c.f.Digest)
	}
	got, err := c.record(ctx)
	if err != nil {
		return err
	}
	if got != record {
		return fmt.Errorf("the keyspace holds the record %q after the fence, want %q", got, record)
	}
	return nil
}

func (c *fenceChecks) fresh(ctx context.Context) error {
	got, err := c.record(ctx)
	if err != nil {
		return err
	}
	if got != "" {
		return fmt.Errorf("found the record %q", got)
	}
	if n, err := c.do(ctx, "EXISTS", c.f.BundleKey).AsInt64(); err != nil || n != 0 {
		return fmt.Errorf("the bundle identity %s exists (%d, %v)", c.f.BundleKey, n, err)
	}
	return nil
}

func (c *fenceChecks) claims(ctx context.Context) error {
	r, err := c.f.Exec(ctx, c.rc)
	if err != nil {
		return err
	}
	return c.admitted(ctx, r, c.f.Record)
}

func (c *fenceChecks) readBack(ctx context.Context) error {
	got, err := c.record(ctx)
	if err != nil {
		return err
	}
	if got != c.f.Record {
		return fmt.Errorf("read %q, want %q", got, c.f.Record)
	}
	if v := c.f.Judge(got); v != Current {
		return fmt.Errorf("the judge calls it %s, want %s", v, Current)
	}
	return nil
}

func (c *fenceChecks) again(ctx context.Context) error {
	before, err := c.dump(ctx)
	if err != nil {
		return err
	}
	r, err := c.f.Exec(ctx, c.rc)
	if err != nil {
		return err
	}
	if err := c.admitted(ctx, r, c.f.Record); err != nil {
		return err
	}
	after, err := c.dump(ctx)
	if err != nil {
		return err
	}
	if before != after {
		return errors.New("the second fence rewrote the record or the bundle identity")
	}
	return nil
}

func (c *fenceChecks) raised(ctx context.Context, low string) error {
	if v := c.f.Judge(low); v != Behind {
		return fmt.Errorf("the judge calls %q %s, want %s", low, v, Behind)
	}
	if err := c.plant(ctx, low); err != nil {
		return err
	}
	r, err := c.f.Exec(ctx, c.rc)
	if err != nil {
		return err
	}
	return c.admitted(ctx, r, c.f.Record)
}

func (c *fenceChecks) ahead(ctx context.Context, high string) error {
	if v := c.f.Judge(high); v != Ahead {
		return fmt.Errorf("the judge calls %q %s, want %s", high, v, Ahead)
	}
	if err := c.plant(ctx, high); err != nil {
		return err
	}
	r, err := c.f.Exec(ctx, c.rc)
	if err != nil {
		return err
	}
	return c.admitted(ctx, r, high)
}

// refused plants a record the fence must refuse: the reply carries it back
// with no digest, and both keys are byte for byte as planted.
func (c *fenceChecks) refused(ctx context.Context, record string) error {
	if v := c.f.Judge(record); v != Foreign {
		return fmt.Errorf("the judge calls %q %s, want %s", record, v, Foreign)
	}
	if err := c.plant(ctx, record); err != nil {
		return err
	}
	before, err := c.dump(ctx)
	if err != nil {
		return err
	}
	r, err := c.f.Exec(ctx, c.rc)
	if err != nil {
		return err
	}
	if r.Record != record || r.Recorded {
		return fmt.Errorf("the fence answered %q with the digest %q (recorded %v), want %q and none", r.Record, r.Bundle, r.Recorded, record)
	}
	after, err := c.dump(ctx)
	if err != nil {
		return err
	}
	if before != after {
		return fmt.Errorf("the fence changed the keyspace it refused (%q)", record)
	}
	return nil
}

func (c *fenceChecks) digest(ctx context.Context) error {
	if err := c.reset(ctx); err != nil {
		return err
	}
	r, err := c.f.Exec(ctx, c.rc)
	if err != nil {
		return err
	}
	if err := c.admitted(ctx, r, c.f.Record); err != nil {
		return err
	}
	got, err := c.digestOf(ctx)
	if err != nil {
		return err
	}
	if got != c.f.Digest {
		return fmt.Errorf("recorded %q for %s, want %q", got, c.f.Semver, c.f.Digest)
	}
	sum := sha1.Sum([]byte("foreign bundle " + c.f.Digest))
	foreign := hex.EncodeToString(sum[:])
	if err := c.reset(ctx); err != nil {
		return err
	}
	if err := c.rc.Do(ctx, c.rc.B().Hset().Key(c.f.BundleKey).FieldValue().FieldValue(c.f.Semver, foreign).Build()).Error(); err != nil {
		return err
	}
	if r, err = c.f.Exec(ctx, c.rc); err != nil {
		return err
	}
	if r.Record != c.f.Record || !r.Recorded || r.Bundle != foreign {
		return fmt.Errorf("the fence answered %q with the digest %q, want %q with the planted %q", r.Record, r.Bundle, c.f.Record, foreign)
	}
	if got, err = c.digestOf(ctx); err != nil {
		return err
	}
	if got != foreign {
		return fmt.Errorf("the planted digest became %q", got)
	}
	return nil
}
