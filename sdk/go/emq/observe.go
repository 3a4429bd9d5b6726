package emq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// Observe opens a client for tools that look at a keyspace they do not
// own, such as an operator's command line or a dashboard: it reads the
// keyspace's version record (Keyspace) and never fences. It never runs the
// fence script, so it neither claims a fresh keyspace nor raises one behind
// (until ClaimKeyspace is called), and never writes the version record or
// the bundle identity; it leases no snowflake node, so Mint fails with
// ErrNoNode; it sends no CONFIG GET.
//
// Reads (Queue.Get, Page, PageEntries, Sizes, Size, Browse) run whatever
// the record. Every write (a script call through a Queue or a Worker) is
// refused with a *KeyspaceError, before anything is sent, while the record
// is absent or foreign (KeyspaceVersion.Writable); a keyspace of this
// major, ahead or behind, is written as it is found. Options.Node,
// NodeLease and MaxPayload are ignored beyond the payload cap. The server
// is found as for Connect: Addr, Addrs, URL or Redis.InitAddress.
func Observe(ctx context.Context, opt Options) (*Client, error) {
	c := &Client{log: opt.Logger, metrics: opt.Metrics, maxPayload: opt.MaxPayload, stop: make(chan struct{}), observer: true}
	c.pushOptions(opt)
	if c.maxPayload <= 0 || c.maxPayload > defaultMaxPayload {
		c.maxPayload = defaultMaxPayload
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.metrics == nil {
		c.metrics = noMetrics{}
	}
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	c.owner = hex.EncodeToString(tok[:])
	ro, err := clientOption(opt)
	if err != nil {
		return nil, err
	}
	c.watchDials(&ro) // an observer never fences: only the watch and the notSent marks
	rc, err := rueidis.NewClient(ro)
	if err != nil {
		return nil, errorf("emq: observe: %w", err)
	}
	c.rc = c.wrap(rc)
	if _, err := c.ReadVersion(ctx); err != nil {
		rc.Close()
		return nil, err
	}
	return c, nil
}

// Observing reports whether the client was opened with Observe: it does
// not fence, and writes only a keyspace of this major.
func (c *Client) Observing() bool { return c.observer }

// Keyspace returns the version record the client last read or fenced, with
// its verdict: what Observe (or ReadVersion, or ClaimKeyspace) found, or,
// on a client from Connect, what its last fence found.
func (c *Client) Keyspace() KeyspaceVersion {
	if v := c.keyspace.Load(); v != nil {
		return *v
	}
	if r := c.VersionFound(); r != "" {
		return KeyspaceVersion{Record: r, Verdict: JudgeVersionRecord(r)}
	}
	return KeyspaceVersion{Verdict: VersionAbsent}
}

// ReadVersion reads the keyspace's version record with one GET and judges
// it (JudgeVersionRecord), writing nothing. On an observing client what it
// read becomes Keyspace, by which later writes are allowed or refused.
func (c *Client) ReadVersion(ctx context.Context) (_ KeyspaceVersion, err error) {
	defer c.afterFailure(ctx, &err)
	v, err := readVersion(ctx, c.rc)
	if err != nil {
		return v, err
	}
	if c.observer {
		c.keyspace.Store(&v)
		if v.Verdict != VersionAbsent && v.Verdict != VersionForeign {
			found := v.Record
			c.found.Store(&found)
		}
	}
	return v, nil
}

// ClaimKeyspace claims a keyspace that has no version record, exactly as
// Connect's fence does: it runs the fence script once, which records
// VersionRecord and this bundle's digest. It first reads the record and
// does nothing (claimed false) when there is one, whatever it holds: a
// keyspace behind is not raised and a foreign one is not touched. What the
// fence answered becomes Keyspace; it is judged as Connect judges it (a
// *FenceError, a *BundleError). Should another client claim the keyspace
// between the read and the fence, the fence acts on what that client wrote,
// as it does for Connect.
func (c *Client) ClaimKeyspace(ctx context.Context) (claimed bool, err error) {
	v, err := c.ReadVersion(ctx)
	if err != nil || v.Verdict != VersionAbsent {
		return false, err
	}
	call := wire.FenceCall{VersionKey: wire.KeyVersion, BundleKey: wire.KeyBundle, Version: wire.VersionRecord, Semver: Version, Bundle: wire.BundleDigest}
	r, err := call.Exec(ctx, c.rc)
	if err != nil {
		if refused(err) {
			return false, errorf("emq: the server refuses this user the version fence on %s and %s (an ACL permission is missing): %w", wire.KeyVersion, wire.KeyBundle, err)
		}
		return false, errorf("%w: %v", ErrVersionFence, err)
	}
	got := KeyspaceVersion{Record: r.Version, Verdict: JudgeVersionRecord(r.Version)}
	if c.observer {
		c.keyspace.Store(&got)
	}
	if _, err := CheckVersionRecord(r.Version); err != nil {
		return true, err
	}
	if r.Bundle != wire.BundleDigest {
		return true, &BundleError{Version: Version, Found: r.Bundle, Want: wire.BundleDigest}
	}
	found := r.Version
	c.found.Store(&found)
	return true, nil
}

// ensureRead is ensure for commands that only read: an observing client
// reads whatever the keyspace's record says.
func (c *Client) ensureRead(ctx context.Context) error {
	if c.observer {
		return nil
	}
	return c.ensure(ctx)
}
