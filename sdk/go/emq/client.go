package emq

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// Options configure Connect. Say where the server is with exactly one of
// Addr, Addrs, URL and Redis.InitAddress; Connect refuses none or several
// with an error wrapping ErrArgument, before dialing.
type Options struct {
	// Addr is the host:port of one server, standalone or any node of a
	// cluster: "127.0.0.1:6379".
	Addr string
	// Addrs are several host:port seeds, e.g. nodes of a cluster.
	Addrs []string
	// URL is a redis:// URL, or rediss:// for TLS, with optional
	// credentials and database: "redis://user:pass@host:6379/0". It is
	// read by rueidis.ParseURL, query parameters (dial_timeout, ...)
	// included. Whatever it sets, Redis must leave unset, except that with
	// rediss:// Redis.TLSConfig replaces the default TLS configuration
	// (to trust a private CA, say).
	URL string
	// Redis is everything else about the connection: credentials, TLS,
	// timeouts, cluster options — any rueidis.ClientOption. Connect wraps
	// its dialer to notice reconnects and fence again after them. A
	// DialCtxFn of your own should return a socket (a syscall.Conn), or a
	// wrapper with a NetConn method as *tls.Conn has: the client looks into
	// it before a write, so as not to send a command to a connection the
	// server has closed (see ErrConnection).
	Redis rueidis.ClientOption
	// Node fixes the snowflake node of the client's id Generator. Leave it
	// nil to lease a free node from the reserve's locks (the default), which
	// keeps node numbers unique among live minters; set it only when you
	// assign nodes yourself.
	Node *int
	// NodeLease is how long a leased node stays held without renewal; it is
	// renewed every third of it. Default 30s.
	NodeLease time.Duration
	// Logger receives the client's notices: a keyspace ahead of this
	// version, a lost node lease. Default slog.Default().
	Logger *slog.Logger
	// Metrics receives the counts of this client's queues and workers
	// (enqueued, claimed, completed, ...). Default: none kept.
	Metrics Metrics
	// MaxPayload caps a job's payload in bytes: a larger one is refused
	// with ErrPayloadTooLarge before anything is sent (the server would
	// otherwise close the connection, failing every command in flight on
	// it). Default, and never above: the server's proto-max-bulk-len as
	// read at Connect, or Redis's default 512 MiB when it cannot be read.
	MaxPayload int64

	// DisableCoalescing turns off the coalescing of concurrent Queue.Push
	// calls (and of Queue.PushDedup calls): each Push is then one push
	// script call of its own, as before 2.2.0, and each PushDedup one
	// add_dedup call. Coalescing is on by default (see Queue.Push).
	DisableCoalescing bool
	// PushLinger bounds how long a coalesced Push waits while an earlier
	// batch of its queue is in flight before it is sent anyway, in a batch
	// of its own with whatever else waits. A Push meeting no batch in
	// flight is sent at once. Default 1ms; a negative value waits for the
	// batch in flight (or a full batch) only.
	PushLinger time.Duration
	// PushMaxBatch caps the jobs of one push_many call: a coalesced batch
	// is sent as soon as this many pushes wait, and PushBatch sends its
	// jobs in chunks of this many (pipelined). A batch also stops taking
	// jobs once their payloads reach 1 MiB. Default 128.
	PushMaxBatch int

	// EventsMax is the approximate bound (XADD MAXLEN ~) of a queue's
	// events stream that this client's Revive keeps as it reports a
	// revival (echomq 2.4.0). Default 10000; negative writes no event,
	// and Revive then runs the 2.1 revive and ring scripts, which touch
	// no events stream. Workers have their own (WorkerOptions.EventsMax).
	EventsMax int
}

// The push coalescing defaults (Options.PushLinger, PushMaxBatch) and the
// payload bytes a batch stops at.
const (
	defaultPushLinger   = time.Millisecond
	defaultPushMaxBatch = 128
	maxBatchBytes       = 1 << 20
)

// pushOptions takes the push coalescing options, defaulted.
func (c *Client) pushOptions(opt Options) {
	c.coalesce = !opt.DisableCoalescing
	switch {
	case opt.PushLinger == 0:
		c.pushLinger = defaultPushLinger
	case opt.PushLinger > 0:
		c.pushLinger = opt.PushLinger
	}
	c.pushMax = opt.PushMaxBatch
	if c.pushMax <= 0 {
		c.pushMax = defaultPushMaxBatch
	}
}

// ErrPayloadTooLarge means a payload is larger than the client's
// MaxPayload; nothing was sent. It matches ErrArgument too.
var ErrPayloadTooLarge = errorf("%w: payload too large", ErrArgument)

// defaultMaxPayload is Redis's default proto-max-bulk-len.
const defaultMaxPayload = 512 << 20

// ErrNoNode means the client holds no snowflake node to mint ids with: its
// lease was lost and is not yet taken again, or every node is leased.
var ErrNoNode = errors.New("emq: no snowflake node held")

// Client is a fenced connection to an EchoMQ keyspace. It is safe for
// concurrent use.
type Client struct {
	rc         rueidis.Client
	log        *slog.Logger
	metrics    Metrics
	maxPayload int64

	coalesce   bool          // Options.DisableCoalescing unset
	pushLinger time.Duration // Options.PushLinger, defaulted; <= 0: none
	pushMax    int           // Options.PushMaxBatch, defaulted
	pushers    sync.Map      // queue name (and admission options) -> *pusher
	eventsMax  int64         // Options.EventsMax, defaulted; 0: no events
	unparsed   unparsedLog   // the schedulers' records a planner logged as unparseable

	dials      atomic.Uint64 // connections opened (or failed) so far
	standalone atomic.Bool   // a fenced standalone server: fence every new connection as it is dialed
	fenced     atomic.Uint64 // dials at the last successful fence
	fenceMu    sync.Mutex
	found      atomic.Pointer[string]          // the version record at the last fence
	observer   bool                            // opened by Observe: never fences, writes only a keyspace of this major
	keyspace   atomic.Pointer[KeyspaceVersion] // an observer's last reading of the version record

	owner      string // this client's lock owner token
	gen        atomic.Pointer[wire.Generator]
	leaseUntil atomic.Int64 // Unix ms until which the node lease surely holds
	lease      time.Duration
	stop       chan struct{}
	done       sync.WaitGroup
	closeOnce  sync.Once
}

// Connect opens a client and fences the keyspace: it claims a fresh
// keyspace with VersionRecord, raises a lower minor of this major, admits a
// higher minor (reported as ahead), refuses anything else with a
// *FenceError, and refuses a different bundle recorded for this version
// with a *BundleError. A server that cannot be reached, or a fence that
// fails in transport, is an error matching ErrConnection (never a
// *FenceError). The client fences again before the first command after
// any reconnect; a command never sent waits for a connection within its
// context, idempotent calls are resent across a reconnect, the others fail
// with ErrConnection once written (see ErrConnection).
func Connect(ctx context.Context, opt Options) (*Client, error) {
	c := &Client{log: opt.Logger, metrics: opt.Metrics, maxPayload: opt.MaxPayload, lease: opt.NodeLease, stop: make(chan struct{})}
	c.pushOptions(opt)
	c.eventsMax = eventsMaxOf(opt.EventsMax)
	if c.maxPayload <= 0 || c.maxPayload > defaultMaxPayload {
		c.maxPayload = defaultMaxPayload
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.metrics == nil {
		c.metrics = noMetrics{}
	}
	if c.lease <= 0 {
		c.lease = 30 * time.Second
	}
	var tok [8]byte
	_, _ = rand.Read(tok[:])
	c.owner = hex.EncodeToString(tok[:])
	ro, err := clientOption(opt)
	if err != nil {
		return nil, err
	}
	c.watchDials(&ro)
	ro.RetryDelay = retryDelay(ro.RetryDelay)
	rc, err := rueidis.NewClient(ro)
	if err != nil {
		return nil, connectionError(errorf("emq: connect: %w", err))
	}
	c.rc = c.wrap(rc)
	if err := c.ensure(ctx); err != nil {
		rc.Close()
		return nil, err
	}
	// From now on every connection that replaces one of a standalone
	// server is fenced as it is dialed (a cluster's queue nodes hold no
	// fence; ensure covers the reserve's).
	c.standalone.Store(rc.Mode() == rueidis.ClientModeStandalone)
	c.readServerConfig(ctx)
	if opt.Node != nil {
		g, err := wire.NewGenerator(*opt.Node)
		if err != nil {
			rc.Close()
			return nil, err
		}
		c.gen.Store(g)
		c.leaseUntil.Store(1<<62 - 1)
	} else {
		if err := c.leaseNode(ctx); err != nil {
			rc.Close()
			return nil, err
		}
		c.done.Add(1)
		go c.renewNode()
	}
	return c, nil
}

// watchDials wraps ro's dialer: every connection is watched (watchedConn),
// a connection that replaces one of a fenced standalone server is fenced
// before rueidis uses it (dialFence), and a dial that fails, or whose fence
// fails in transport, is marked as never sent (notSent): the command that
// dialed it was not written anywhere.
func (c *Client) watchDials(ro *rueidis.ClientOption) {
	dial := ro.DialCtxFn
	if dial == nil {
		dial = defaultDial
	}
	fenceOpt := *ro
	ro.DialCtxFn = func(ctx context.Context, dst string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		conn, err := dial(ctx, dst, d, cfg)
		if err != nil {
			return nil, markNotSent(&dialError{err})
		}
		c.dials.Add(1)
		if c.standalone.Load() {
			// A replacement connection: fence it before rueidis uses it.
			if err := c.dialFence(conn, fenceOpt); err != nil {
				conn.Close()
				if transient(err) {
					return nil, markNotSent(&dialError{err})
				}
				c.log.Error("emq: a new connection met a keyspace this client may not use", "addr", dst, "err", err)
				return nil, &dialError{err}
			}
		}
		return &watchedConn{Conn: conn, c: c, peek: newPeeker(conn)}, nil
	}
}

// dialError is an error of the dialer: rueidis hands it to the command
// that dialed, and the generated layer prefixes that command's errors, so
// its message drops its own prefix (onePrefix); errors.Is and errors.As
// see the error itself.
type dialError struct{ err error }

func (e *dialError) Error() string { return strings.TrimPrefix(onePrefix(e.err.Error()), prefix) }
func (e *dialError) Unwrap() error { return e.err }

// wrap is rc with every command that was never sent sent again
// (sendClient), and on a cluster what a slot migration answers TRYAGAIN
// resent (tryAgainClient).
func (c *Client) wrap(rc rueidis.Client) rueidis.Client {
	if rc.Mode() == rueidis.ClientModeCluster {
		rc = tryAgainClient{rc}
	}
	return sendClient{Client: rc, c: c}
}

// clientOption is opt.Redis with the server's address taken from Addr,
// Addrs or URL (exactly one of them and Redis.InitAddress).
func clientOption(opt Options) (rueidis.ClientOption, error) {
	var given []string
	for _, g := range []struct {
		name string
		set  bool
	}{{"Addr", opt.Addr != ""}, {"Addrs", len(opt.Addrs) > 0}, {"URL", opt.URL != ""}, {"Redis.InitAddress", len(opt.Redis.InitAddress) > 0}} {
		if g.set {
			given = append(given, g.name)
		}
	}
	switch len(given) {
	case 0:
		return rueidis.ClientOption{}, errorf("%w: Connect: no server address: set Options.Addr (host:port), Addrs, URL (redis://host:port/db) or Redis.InitAddress", ErrArgument)
	case 1:
	default:
		return rueidis.ClientOption{}, errorf("%w: Connect: the server address is given %d times (%s): set exactly one", ErrArgument, len(given), strings.Join(given, ", "))
	}
	ro := opt.Redis
	switch {
	case opt.Addr != "":
		ro.InitAddress = []string{opt.Addr}
	case len(opt.Addrs) > 0:
		ro.InitAddress = slices.Clone(opt.Addrs)
	case opt.URL != "":
		u, err := rueidis.ParseURL(opt.URL)
		if err != nil {
			return rueidis.ClientOption{}, errorf("%w: Connect: Options.URL: %w", ErrArgument, err)
		}
		tlsConf := ro.TLSConfig
		switch {
		case tlsConf != nil && u.TLSConfig == nil:
			return rueidis.ClientOption{}, errorf("%w: Connect: Options.URL is not rediss:// but Redis.TLSConfig is set: use rediss:// for TLS", ErrArgument)
		case tlsConf != nil:
			ro.TLSConfig = nil // rediss:// with the caller's configuration
		}
		if err := overlay(reflect.ValueOf(&u).Elem(), reflect.ValueOf(ro), "Redis"); err != nil {
			return rueidis.ClientOption{}, err
		}
		if tlsConf != nil {
			u.TLSConfig = tlsConf
		}
		ro = u
	}
	return ro, nil
}

// overlay copies every field set in src (non-zero, exported) into dst,
// descending into struct fields, and refuses a field both set: what a URL
// sets, Options.Redis must leave alone.
func overlay(dst, src reflect.Value, path string) error {
	t := src.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		sv, dv := src.Field(i), dst.Field(i)
		if !f.IsExported() || sv.IsZero() {
			continue
		}
		name := path + "." + f.Name
		if f.Type.Kind() == reflect.Struct {
			if err := overlay(dv, sv, name); err != nil {
				return err
			}
			continue
		}
		if !dv.IsZero() {
			return errorf("%w: Connect: Options.URL sets %s, and so does Options.%s: set it in one place", ErrArgument, strings.TrimPrefix(name, "Redis."), name)
		}
		dv.Set(sv)
	}
	return nil
}

// safePolicies are the maxmemory policies that never evict a job's keys:
// none at all, or only keys with a TTL (EchoMQ sets none).
var safePolicies = map[string]bool{"noeviction": true, "volatile-lru": true, "volatile-lfu": true, "volatile-random": true, "volatile-ttl": true}

// readServerConfig reads what the servers' configuration means for jobs:
// it warns when a server may evict keys without a TTL, which would lose
// jobs silently, and lowers the payload cap to the smallest
// proto-max-bulk-len, so that an oversized payload is refused before it is
// sent. A server that refuses CONFIG GET (a managed service, or an ACL
// without it) is only noted at debug level.
func (c *Client) readServerConfig(ctx context.Context) {
	warned := false
	for _, n := range c.rc.Nodes() {
		m, err := n.Do(ctx, n.B().ConfigGet().Parameter("maxmemory-policy", "proto-max-bulk-len").Build()).AsStrMap()
		if err != nil {
			c.log.Debug("emq: cannot read maxmemory-policy; make sure the server never evicts job keys", "err", err)
			return
		}
		if p := m["maxmemory-policy"]; p != "" && !safePolicies[p] && !warned {
			c.log.Warn("emq: the server may evict keys without a TTL, and so lose jobs; set maxmemory-policy to noeviction", "maxmemory-policy", p)
			warned = true
		}
		if v, err := strconv.ParseInt(m["proto-max-bulk-len"], 10, 64); err == nil && v > 0 && v < c.maxPayload {
			c.maxPayload = v
		}
	}
}

// checkPayload refuses a payload over the cap before anything is sent.
func (c *Client) checkPayload(payload []byte) error {
	if int64(len(payload)) > c.maxPayload {
		return errorf("%w: %d bytes, the cap is %d (Options.MaxPayload, or the server's proto-max-bulk-len)", ErrPayloadTooLarge, len(payload), c.maxPayload)
	}
	return nil
}

// defaultDial is rueidis's own dialing: TLS when configured, TCP otherwise.
func defaultDial(ctx context.Context, dst string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
	if cfg != nil {
		td := tls.Dialer{NetDialer: d, Config: cfg}
		return td.DialContext(ctx, "tcp", dst)
	}
	return d.DialContext(ctx, "tcp", dst)
}

// Close releases the node lease and closes the connections.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		close(c.stop)
		c.done.Wait()
		if g := c.gen.Load(); g != nil && c.leaseUntil.Load() != 1<<62-1 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			call := wire.UnlockCall{Locks: wire.KeyLocks, Name: wire.LockNode(g.Node()), Owner: c.owner}
			rc := c.rc
			if s, ok := rc.(sendClient); ok {
				rc = s.Client // best effort: the lease lapses anyway, so no waiting for a connection
			}
			_, _ = call.Exec(ctx, rc)
			cancel()
		}
		c.rc.Close()
	})
}

// Redis returns the underlying rueidis client, for commands of your own.
// Commands sent through it are not fenced after a reconnect. On a Redis
// Cluster its Do and DoMulti resend a command the cluster answers TRYAGAIN
// (a slot in migration) until it is answered otherwise or ctx ends.
func (c *Client) Redis() rueidis.Client { return c.rc }

// VersionFound returns the version record the last fence found: VersionRecord,
// or a higher minor of this major when the keyspace is ahead.
func (c *Client) VersionFound() string {
	if v := c.found.Load(); v != nil {
		return *v
	}
	return ""
}

// Node returns the snowflake node the client mints with, or -1 when it
// holds none.
func (c *Client) Node() int {
	if g := c.gen.Load(); g != nil {
		return g.Node()
	}
	return -1
}

// Mint returns a fresh id of kind from the client's node. It fails with
// ErrNoNode while the node lease is not surely held.
func (c *Client) Mint(kind Kind) (ID, error) {
	g := c.gen.Load()
	if g == nil || time.Now().UnixMilli() >= c.leaseUntil.Load() {
		return ID{}, ErrNoNode
	}
	return g.Mint(kind)
}

// watchedConn reports a connection that failed (the server went away,
// restarted or failed over) as if a new one had been dialed: rueidis dials
// the replacement lazily, inside the next command, which would then run
// before any fence; counting the failure makes the next ensure fence first,
// on the new connection.
//
// It also keeps a command from being written to a connection the server has
// already closed, where it would fail as if it had been sent (and might
// have run): rueidis sets the connection's deadline before each command it
// writes while nothing else is outstanding on it (a connection without a
// background reader, or one whose reader is about to start), so the first
// write after a deadline is set looks at the socket first (peerClosed),
// and a connection found closed fails that write with nothing written,
// marked notSent. Writes of a connection in full pipelining (its reader
// notices a close at once) are not looked at.
type watchedConn struct {
	net.Conn
	c     *Client
	ended atomic.Uint64 // the client's dial count when the connection failed; 0 while it works
	armed atomic.Bool   // a deadline was set since the last write: the next write looks first
	peek  *peeker       // nil when the connection cannot be looked into
}

// errPeerClosed is a write refused because the server had closed the
// connection before it.
var errPeerClosed = errorf("the server closed the connection before the command was sent: %w", io.EOF)

// fail counts the connection's first failure as a reconnect, and returns
// the dial count it was counted at.
func (w *watchedConn) fail() uint64 {
	if at := w.ended.Load(); at != 0 {
		return at
	}
	at := w.c.dials.Add(1)
	if !w.ended.CompareAndSwap(0, at) {
		return w.ended.Load()
	}
	return at
}

// failed settles an error of the connection: its failure is counted, and
// when the server closed or reset the connection the error is a *connEnd,
// which tells rueidis's answer to a command that came after the end (one it
// never wrote, or wrote to a socket the server no longer read) from one
// that was outstanding at it.
func (w *watchedConn) failed(err error) error {
	at := w.fail()
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return &connEnd{err: err, at: at}
	}
	return err
}

func (w *watchedConn) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	if err != nil {
		err = w.failed(err)
	}
	return n, err
}

func (w *watchedConn) Write(p []byte) (int, error) {
	if w.armed.Swap(false) && w.peek.peerClosed() {
		w.fail()
		return 0, markNotSent(errPeerClosed)
	}
	n, err := w.Conn.Write(p)
	if err != nil {
		err = w.failed(err)
	}
	return n, err
}

// SetDeadline arms the look before the next write (see watchedConn).
func (w *watchedConn) SetDeadline(t time.Time) error {
	w.armed.Store(true)
	return w.Conn.SetDeadline(t)
}

// ensure fences the keyspace when a connection was opened or failed since
// the last fence. It costs two atomic loads when nothing reconnected. An
// observing client never fences: it refuses to write a keyspace whose
// record is absent or foreign.
//
// The fence is idempotent, so a fence that failed in transport after it
// was written (a stale connection of several pipelined ones, say) runs
// again at once, on whatever connection replaced the failed one, up to
// refenceAttempts times; one that was never sent has already waited for a
// connection (sendClient), and a timeout (a server that does not answer)
// ends it.
func (c *Client) ensure(ctx context.Context) error {
	if c.observer {
		return c.Keyspace().Writable()
	}
	if c.dials.Load() == c.fenced.Load() {
		return nil
	}
	c.fenceMu.Lock()
	defer c.fenceMu.Unlock()
	for n := 1; ; n++ {
		d := c.dials.Load()
		if d == c.fenced.Load() {
			return nil
		}
		err := c.fence(ctx)
		if err == nil {
			c.fenced.Store(d)
			return nil
		}
		if !transient(err) || neverSent(err) || timedOut(err) || ctx.Err() != nil || n >= refenceAttempts {
			return err
		}
		c.log.Debug("emq: the version fence failed in transport; running it again on a fresh connection", "attempt", n, "err", err)
	}
}

// fence runs the fence script and judges what it found.
func (c *Client) fence(ctx context.Context) error {
	call := wire.FenceCall{VersionKey: wire.KeyVersion, BundleKey: wire.KeyBundle, Version: wire.VersionRecord, Semver: Version, Bundle: wire.BundleDigest}
	r, err := call.Exec(ctx, c.rc)
	var fe *FenceError
	var be *BundleError
	switch {
	case errors.As(err, &fe):
		return fe // a connection's own fence refused the keyspace as it was dialed
	case errors.As(err, &be):
		return be
	}
	if err != nil {
		if transient(err) {
			// The fence could not run: not a refusal. Matches ErrConnection,
			// never ErrVersionFence.
			if errors.Is(err, ErrConnection) {
				return err
			}
			return errorf("%w: the version fence could not run: %w", ErrConnection, err)
		}
		if refused(err) {
			return errorf("emq: the server refuses this user the version fence on %s and %s (an ACL permission is missing; docs/security.md lists what every client needs): %w", wire.KeyVersion, wire.KeyBundle, err)
		}
		if re, ok := rueidis.IsRedisErr(errors.Unwrap(err)); ok && !clusterState(re) {
			return errorf("%w: %v", ErrVersionFence, err)
		}
		return err
	}
	ahead, err := CheckVersionRecord(r.Version)
	if err != nil {
		return err
	}
	if r.Bundle != wire.BundleDigest {
		return &BundleError{Version: Version, Found: r.Bundle, Want: wire.BundleDigest}
	}
	if ahead && c.VersionFound() != r.Version {
		c.log.Info("emq: the keyspace is ahead of this client; minors are additive, so it is served", "keyspace", r.Version, "client", wire.VersionRecord)
	}
	found := r.Version
	c.found.Store(&found)
	return nil
}

// refused reports whether err is the server refusing this user an ACL
// permission: NOPERM for a command or a key, or the same refusal met inside
// a script, which Redis 7.0 words "The user executing the script can't ..."
// and later servers "ACL failure in script: ...".
func refused(err error) bool {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "ACL failure in script") || strings.Contains(msg, "user executing the script can't")
}

// CheckVersionRecord judges a version record found in a keyspace: nil when
// it is this client's version, nil with ahead set when it is a higher minor
// or patch of this major, and a *FenceError for another major, a lower
// version the fence could not raise, or a value that is not a record. It
// is JudgeVersionRecord's verdict as an error.
func CheckVersionRecord(record string) (ahead bool, err error) {
	switch JudgeVersionRecord(record) {
	case VersionCurrent:
		return false, nil
	case VersionAhead:
		return true, nil
	}
	return false, &FenceError{Found: record, Want: wire.VersionRecord}
}

// leaseNode takes a free snowflake node from the reserve's locks, starting
// at a random node so that clients spread out.
func (c *Client) leaseNode(ctx context.Context) error {
	start := mrand.IntN(wire.MaxNode + 1)
	for i := 0; i <= wire.MaxNode; i++ {
		n := (start + i) % (wire.MaxNode + 1)
		ok, err := c.lockNode(ctx, n)
		if err != nil && refused(err) {
			return errorf("emq: leasing a node: the server refuses this user the lock script on %s (an ACL permission is missing; docs/security.md lists what every client needs): %w", wire.KeyLocks, err)
		}
		if err != nil {
			return errorf("emq: leasing a node: %w", err)
		}
		if ok {
			g, err := wire.NewGenerator(n)
			if err != nil {
				return err
			}
			c.gen.Store(g)
			return nil
		}
	}
	return errorf("%w: all %d nodes are leased", ErrNoNode, wire.MaxNode+1)
}

// lockNode takes or renews the lease on node n; the lease is taken to hold
// until the call's start plus the lease, less a margin for clock drift.
func (c *Client) lockNode(ctx context.Context, n int) (bool, error) {
	start := time.Now()
	call := wire.LockCall{Locks: wire.KeyLocks, Name: wire.LockNode(n), Owner: c.owner, TTLMS: c.lease.Milliseconds()}
	deadline, err := call.Exec(ctx, c.rc)
	if err != nil || deadline == wire.LockHeld {
		return false, err
	}
	c.leaseUntil.Store(start.Add(c.lease - c.lease/10).UnixMilli())
	return true, nil
}

// renewNode renews the node lease every third of its length until Close.
// A lease lost to another owner is replaced by a fresh one.
func (c *Client) renewNode() {
	defer c.done.Done()
	t := time.NewTicker(c.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.lease/3)
		g := c.gen.Load()
		ok, err := c.lockNode(ctx, g.Node())
		switch {
		case err != nil:
			c.log.Warn("emq: renewing the node lease failed; retrying", "node", g.Node(), "err", err)
		case !ok:
			c.log.Error("emq: the node lease was lost to another owner; leasing a new node", "node", g.Node())
			c.leaseUntil.Store(0)
			if err := c.leaseNode(ctx); err != nil {
				c.log.Error("emq: leasing a new node failed", "err", err)
			}
		}
		cancel()
	}
}
