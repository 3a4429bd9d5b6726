package emq

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/probe"
)

// ErrFenceDBNotEmpty means RunFenceChecks was given a database that holds
// keys; nothing was run or written.
var ErrFenceDBNotEmpty = errors.New("emq: the fence database is not empty")

// ErrFenceDBCluster means RunFenceChecks was given a Redis Cluster client:
// a cluster has no logical databases (no SELECT), so there is no empty one
// to run the checks in apart from the data.
var ErrFenceDBCluster = errors.New("emq: Redis Cluster has no logical databases (SELECT), so the fence checks cannot run apart from the data")

// FenceTarget names the fence checks in a transcript: "script " and the
// fence script's name.
var FenceTarget = "script " + wire.ScriptFence.Name

// RunFenceChecks runs the version fence's eight checks with rc, which must
// be connected to an empty logical database of a standalone server (a
// client with ClientOption.SelectDB and ForceSingleClient); anything else
// is refused untouched, with ErrFenceDBNotEmpty or ErrFenceDBCluster. The
// checks: a fresh keyspace has no record; the fence claims it with
// VersionRecord; the record reads back; a second fence changes nothing;
// a lower record of this major is raised (for a major.0.0 version nothing
// is lower but a pre-release, which is not a record: it is refused and
// left as found); a higher minor is admitted as ahead and never lowered;
// other majors (the next, and the previous at a higher minor than this
// one) are refused and left byte for byte; the bundle digest is recorded
// for Version and a planted foreign digest is reported back, not
// overwritten. Every check is also held against JudgeVersionRecord. What
// the checks wrote is deleted afterwards. The transcript has one line per
// check, ending PASS n/m.
func RunFenceChecks(ctx context.Context, rc rueidis.Client) (*probe.Transcript, error) {
	return fenceSpec{version: thisVersion, digest: wire.BundleDigest}.run(ctx, rc)
}

// fenceSpec is the version and bundle digest the fence checks run as: this
// package's, or, in tests, another version of this protocol with the same
// fence script.
type fenceSpec struct {
	version [3]int
	digest  string
}

func (f fenceSpec) record() string { return recordOf(f.version) }

func (f fenceSpec) semver() string {
	return strconv.Itoa(f.version[0]) + "." + strconv.Itoa(f.version[1]) + "." + strconv.Itoa(f.version[2])
}

func (f fenceSpec) run(ctx context.Context, rc rueidis.Client) (*probe.Transcript, error) {
	if rc.Mode() == rueidis.ClientModeCluster {
		return nil, ErrFenceDBCluster
	}
	n, err := rc.Do(ctx, rc.B().Dbsize().Build()).AsInt64()
	if err != nil {
		return nil, errorf("emq: counting the fence database's keys: %w", err)
	}
	if n != 0 {
		return nil, errorf("%w: it holds %d key(s); give a database nobody uses", ErrFenceDBNotEmpty, n)
	}
	c := &fenceChecks{f: f, rc: rc}
	t := &probe.Transcript{}
	for _, ch := range c.checks() {
		t.Results = append(t.Results, probe.Result{Target: FenceTarget, Check: ch.check, Err: ch.run(ctx)})
	}
	if err := c.reset(ctx); err != nil {
		return t, errorf("emq: cleaning up the fence database: %w", err)
	}
	return t, nil
}

// fenceChecks are the eight checks over one fence and one database.
type fenceChecks struct {
	f  fenceSpec
	rc rueidis.Client
}

type fenceCheck struct {
	check string
	run   func(ctx context.Context) error
}

func (c *fenceChecks) checks() []fenceCheck {
	v := c.f.version
	base := recordOf([3]int{v[0], 0, 0})
	ahead := recordOf([3]int{v[0], v[1] + 1, 0})
	lower := fenceCheck{
		check: fmt.Sprintf("a lower version of this major (%s) is raised to this version", base),
		run:   func(ctx context.Context) error { return c.raised(ctx, base) },
	}
	if v[1] == 0 && v[2] == 0 {
		// Nothing of this major is lower than major.0.0 but a pre-release
		// of it, and a pre-release is not a version record: the fence must
		// refuse it rather than raise it, and leave it as found.
		pre := c.f.record() + "-rc.1"
		lower = fenceCheck{
			check: fmt.Sprintf("nothing of this major is lower than %s but a pre-release (%s), which is refused, not raised, and left as found", c.f.semver(), pre),
			run:   func(ctx context.Context) error { return c.refused(ctx, pre) },
		}
	}
	// The next major at a lower minor, and the previous one at a higher
	// minor: a fence that compared minors alone would raise the one and
	// admit the other.
	others := []string{recordOf([3]int{v[0] + 1, 0, 0})}
	if v[0] > 0 {
		others = append(others, recordOf([3]int{v[0] - 1, v[1] + 1, 0}))
	}
	return []fenceCheck{
		{"a fresh keyspace has no version record", c.fresh},
		{fmt.Sprintf("the fence claims a fresh keyspace with %s", c.f.record()), c.claims},
		{"reading back gives this version record", c.readBack},
		{"a second fence admits it and leaves the record unchanged", c.again},
		lower,
		{fmt.Sprintf("a higher minor (%s) is admitted as ahead and never lowered", ahead), func(ctx context.Context) error { return c.ahead(ctx, ahead) }},
		{fmt.Sprintf("another major (%s) is refused and left exactly as found", strings.Join(others, ", ")), func(ctx context.Context) error {
			for _, o := range others {
				if err := c.refused(ctx, o); err != nil {
					return err
				}
			}
			return nil
		}},
		{fmt.Sprintf("the bundle digest is recorded for %s and a planted foreign digest is reported back, not overwritten", c.f.semver()), c.digest},
	}
}

// exec runs the fence script once, as Connect does.
func (c *fenceChecks) exec(ctx context.Context) (wire.FenceReply, error) {
	call := wire.FenceCall{VersionKey: wire.KeyVersion, BundleKey: wire.KeyBundle, Version: c.f.record(), Semver: c.f.semver(), Bundle: c.f.digest}
	return call.Exec(ctx, c.rc)
}

// reset deletes both keys of the fence.
func (c *fenceChecks) reset(ctx context.Context) error {
	for _, k := range []string{wire.KeyVersion, wire.KeyBundle} {
		if err := c.rc.Do(ctx, c.rc.B().Del().Key(k).Build()).Error(); err != nil {
			return err
		}
	}
	return nil
}

// readRecord reads the version record; "" when there is none.
func (c *fenceChecks) readRecord(ctx context.Context) (string, error) {
	s, err := c.rc.Do(ctx, c.rc.B().Get().Key(wire.KeyVersion).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", nil
	}
	return s, err
}

// digestOf reads the digest recorded for the spec's version; "" when none.
func (c *fenceChecks) digestOf(ctx context.Context) (string, error) {
	s, err := c.rc.Do(ctx, c.rc.B().Hget().Key(wire.KeyBundle).Field(c.f.semver()).Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "", nil
	}
	return s, err
}

// dump is the serialized value of both fence keys ("" for an absent key).
func (c *fenceChecks) dump(ctx context.Context) ([2]string, error) {
	var out [2]string
	for i, k := range []string{wire.KeyVersion, wire.KeyBundle} {
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
	return c.rc.Do(ctx, c.rc.B().Set().Key(wire.KeyVersion).Value(record).Build()).Error()
}

// admitted checks a fence reply that should admit the keyspace at record
// with the spec's bundle, and the record the keyspace holds.
func (c *fenceChecks) admitted(ctx context.Context, r wire.FenceReply, record string) error {
	if r.Version != record {
		return errorf("the fence answered the record %q, want %q", r.Version, record)
	}
	if r.Bundle != c.f.digest {
		return errorf("the fence answered the digest %q, want %q", r.Bundle, c.f.digest)
	}
	got, err := c.readRecord(ctx)
	if err != nil {
		return err
	}
	if got != record {
		return errorf("the keyspace holds the record %q after the fence, want %q", got, record)
	}
	return nil
}

// judged checks the verdict of the spec's version on record.
func (c *fenceChecks) judged(record string, want Verdict) error {
	if v := judge(c.f.version, record); v != want {
		return errorf("the judge calls %q %s, want %s", record, v, want)
	}
	return nil
}

func (c *fenceChecks) fresh(ctx context.Context) error {
	got, err := c.readRecord(ctx)
	if err != nil {
		return err
	}
	if got != "" {
		return errorf("found the record %q", got)
	}
	if n, err := c.rc.Do(ctx, c.rc.B().Exists().Key(wire.KeyBundle).Build()).AsInt64(); err != nil || n != 0 {
		return errorf("the bundle identity %s exists (%d, %v)", wire.KeyBundle, n, err)
	}
	return nil
}

func (c *fenceChecks) claims(ctx context.Context) error {
	r, err := c.exec(ctx)
	if err != nil {
		return err
	}
	return c.admitted(ctx, r, c.f.record())
}

func (c *fenceChecks) readBack(ctx context.Context) error {
	got, err := c.readRecord(ctx)
	if err != nil {
		return err
	}
	if got != c.f.record() {
		return errorf("read %q, want %q", got, c.f.record())
	}
	return c.judged(got, VersionCurrent)
}

func (c *fenceChecks) again(ctx context.Context) error {
	before, err := c.dump(ctx)
	if err != nil {
		return err
	}
	r, err := c.exec(ctx)
	if err != nil {
		return err
	}
	if err := c.admitted(ctx, r, c.f.record()); err != nil {
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
	if err := c.judged(low, VersionBehind); err != nil {
		return err
	}
	if err := c.plant(ctx, low); err != nil {
		return err
	}
	r, err := c.exec(ctx)
	if err != nil {
		return err
	}
	return c.admitted(ctx, r, c.f.record())
}

func (c *fenceChecks) ahead(ctx context.Context, high string) error {
	if err := c.judged(high, VersionAhead); err != nil {
		return err
	}
	if err := c.plant(ctx, high); err != nil {
		return err
	}
	r, err := c.exec(ctx)
	if err != nil {
		return err
	}
	return c.admitted(ctx, r, high)
}

// refused plants a record the fence must refuse: the reply carries it back
// with no digest, and both keys are byte for byte as planted.
func (c *fenceChecks) refused(ctx context.Context, record string) error {
	if err := c.judged(record, VersionForeign); err != nil {
		return err
	}
	if err := c.plant(ctx, record); err != nil {
		return err
	}
	before, err := c.dump(ctx)
	if err != nil {
		return err
	}
	r, err := c.exec(ctx)
	if err != nil {
		return err
	}
	if r.Version != record || r.Bundle != "" {
		return errorf("the fence answered %q with the digest %q, want %q and none", r.Version, r.Bundle, record)
	}
	after, err := c.dump(ctx)
	if err != nil {
		return err
	}
	if before != after {
		return errorf("the fence changed the keyspace it refused (%q)", record)
	}
	return nil
}

func (c *fenceChecks) digest(ctx context.Context) error {
	if err := c.reset(ctx); err != nil {
		return err
	}
	r, err := c.exec(ctx)
	if err != nil {
		return err
	}
	if err := c.admitted(ctx, r, c.f.record()); err != nil {
		return err
	}
	got, err := c.digestOf(ctx)
	if err != nil {
		return err
	}
	if got != c.f.digest {
		return errorf("recorded %q for %s, want %q", got, c.f.semver(), c.f.digest)
	}
	sum := sha1.Sum([]byte("foreign bundle " + c.f.digest))
	foreign := hex.EncodeToString(sum[:])
	if err := c.reset(ctx); err != nil {
		return err
	}
	if err := c.rc.Do(ctx, c.rc.B().Hset().Key(wire.KeyBundle).FieldValue().FieldValue(c.f.semver(), foreign).Build()).Error(); err != nil {
		return err
	}
	if r, err = c.exec(ctx); err != nil {
		return err
	}
	if r.Version != c.f.record() || r.Bundle != foreign {
		return errorf("the fence answered %q with the digest %q, want %q with the planted %q", r.Version, r.Bundle, c.f.record(), foreign)
	}
	if got, err = c.digestOf(ctx); err != nil {
		return err
	}
	if got != foreign {
		return errorf("the planted digest became %q", got)
	}
	return nil
}
