package emq

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/probe"
)

// ScratchPrefix starts the name of every scratch queue RunProbes runs a
// probe on; a freshly minted id in lower case follows it.
const ScratchPrefix = "emqprobe-"

// ErrNotFenced marks a failed probe check that reads or writes a key of the
// version fence on a keyspace the client did not fence at its version (an
// observing client on a keyspace without a record, behind, or foreign).
// errors.As to *NotFencedError gives the record.
var ErrNotFenced = errors.New("emq: the keyspace is not fenced at this version")

// NotFencedError explains a failed probe check by the keyspace's version
// record. It matches ErrNotFenced under errors.Is.
type NotFencedError struct {
	KeyspaceVersion
}

// Error says why the keyspace is not fenced at this version.
func (e *NotFencedError) Error() string {
	switch e.Verdict {
	case VersionAbsent:
		return "the keyspace has no version record, and nothing claimed it"
	case VersionBehind:
		return fmt.Sprintf("the keyspace is behind at %q, and was not raised", e.Record)
	}
	return fmt.Sprintf("a foreign keyspace (%q), not fenced", e.Record)
}

// Unwrap returns ErrNotFenced.
func (e *NotFencedError) Unwrap() error { return ErrNotFenced }

// RunProbes runs every probe of the manifest (Probes) against the client's
// keyspace and returns the transcript: one line per check, ending PASS n/m.
// It does not fence: a keyspace the fence would refuse shows up as failed
// checks, not as an error; on an observing client (Observe) whose keyspace
// is absent, behind or foreign, the failed checks that touch the fence's
// keys say so (ErrNotFenced). The error is for what stops the run (a
// connection, a permission, cleaning up), with the transcript so far.
//
// It is safe on a production keyspace:
//
//   - every probe runs on a scratch queue of its own (ScratchPrefix and a
//     freshly minted id, refused when any of its keys already exists) with
//     freshly minted ids, and everything the probe wrote there is deleted
//     when it ends, passed or not;
//   - the ids come from a snowflake node picked at random and not leased:
//     they live only in the scratch queue, and leasing would write the
//     reserve;
//   - outside the scratch queue a probe touches only the lock fields that
//     name the scratch queue (LockProbe, LockMaintenance), which it takes
//     and releases itself; one a failed probe left is removed afterwards,
//     one that was there before is never removed;
//   - the fence script is never run, so the version record and the bundle
//     identity are only read; a probe's command is sent only when the
//     server's COMMAND INFO calls it read-only, or when every key it names
//     (COMMAND GETKEYS) belongs to the scratch queue; anything else fails
//     its check, unsent.
func (c *Client) RunProbes(ctx context.Context) (*probe.Transcript, error) {
	g, err := wire.NewGenerator(mrand.IntN(wire.MaxNode + 1))
	if err != nil {
		return nil, err
	}
	pr := &prober{c: c, gen: g, readOnly: map[string]bool{}}
	probes := wire.Probes()
	t, err := probe.Run(ctx, probes, pr.open)
	if t != nil {
		if v := c.Keyspace(); !v.Verdict.Admitted() {
			annotate(t, probes, &NotFencedError{v})
		}
	}
	return t, err
}

var reservePlaceholder = regexp.MustCompile(`\$\{` + probe.KindReserve + `:([^}]*)\}`)

// touchesFence reports whether a probe step runs the fence script or names
// a key the fence writes.
func touchesFence(s probe.Step) bool {
	if s.Script == wire.ScriptFence.Name {
		return true
	}
	for _, arg := range s.Command {
		for _, m := range reservePlaceholder.FindAllStringSubmatch(arg, -1) {
			if k, err := wire.ReserveKey(m[1], ""); err == nil && (k == wire.KeyVersion || k == wire.KeyBundle) {
				return true
			}
		}
	}
	return false
}

// annotate appends why to every failed check of a step that touches the
// fence. probe.Run appends exactly one result per step, in order.
func annotate(t *probe.Transcript, probes []probe.Probe, why *NotFencedError) {
	i := 0
	for _, p := range probes {
		for _, s := range p.Steps {
			if i >= len(t.Results) {
				return
			}
			if r := &t.Results[i]; r.Err != nil && touchesFence(s) {
				r.Err = errorf("%w (%w)", r.Err, why)
			}
			i++
		}
	}
}

// prober is one RunProbes call: its id generator and what the server said
// of the commands it asked about.
type prober struct {
	c        *Client
	gen      *wire.Generator
	mu       sync.Mutex
	readOnly map[string]bool // lower-case command name -> the server calls it read-only
}

// scratchKeys are the keys of queue q a probe may write and Close deletes,
// rows aside: every per-queue key a set or a script names, and the reserve
// members that name the queue.
func scratchKeys(k wire.QueueKeys) []string {
	var keys []string
	add := func(key string) {
		if key != "" && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	for _, s := range wire.Sets() {
		add(k.Set(s))
	}
	for _, s := range wire.Scripts() {
		for _, typ := range s.KeyTypes {
			if key, ok := k.Key(typ); ok {
				add(key)
			}
		}
	}
	if m, err := wire.KeyMigration(k.Queue()); err == nil {
		add(m)
	}
	return keys
}

// queueLocks are the fields of KeyLocks that name queue q.
func queueLocks(q string) []string { return []string{wire.LockProbe(q), wire.LockMaintenance(q)} }

// open starts a probe's runtime on a fresh scratch queue: one none of
// whose keys exists.
func (p *prober) open(ctx context.Context) (probe.Runtime, error) {
	rc := p.c.rc
	for try := 0; try < 5; try++ {
		id, err := p.gen.Mint(WorkKind)
		if err != nil {
			return nil, err
		}
		keys, err := wire.NewQueueKeys(ScratchPrefix + strings.ToLower(id.String()))
		if err != nil {
			return nil, err
		}
		scratch := scratchKeys(keys)
		taken := false
		for _, k := range scratch {
			n, err := rc.Do(ctx, rc.B().Exists().Key(k).Build()).AsInt64()
			if err != nil {
				return nil, errorf("checking the scratch key %s: %w", k, err)
			}
			taken = taken || n > 0
		}
		if taken {
			continue
		}
		r := &probeRuntime{p: p, keys: keys, scratch: scratch, ids: map[string]ID{}, held: map[string]bool{}}
		for _, f := range queueLocks(keys.Queue()) {
			n, err := rc.Do(ctx, rc.B().Hexists().Key(wire.KeyLocks).Field(f).Build()).AsInt64()
			// Unreadable (another type, no permission) counts as held: Close
			// never removes a field it has not seen absent.
			r.held[f] = err != nil || n > 0
		}
		return r, nil
	}
	return nil, errors.New("found no fresh scratch queue in 5 tries")
}

// probeRuntime is one probe's scratch queue and ids.
type probeRuntime struct {
	p       *prober
	keys    wire.QueueKeys
	scratch []string
	ids     map[string]ID
	order   []string        // id variables in mint order
	held    map[string]bool // lock field -> present before the probe
}

// id returns the id variable name: a registered kind in lower case, with an
// optional digit to tell several apart (job, job2, ord), minted on first use.
func (r *probeRuntime) id(name string) (ID, bool) {
	if id, ok := r.ids[name]; ok {
		return id, true
	}
	kind := Kind(strings.ToUpper(strings.TrimRight(name, "0123456789")))
	if len(kind) != wire.KindLength || !kind.Registered() {
		return ID{}, false
	}
	id, err := r.p.gen.Mint(kind)
	if err != nil {
		return ID{}, false
	}
	r.ids[name] = id
	r.order = append(r.order, name)
	return id, true
}

func (r *probeRuntime) Lookup(name string) (string, bool) {
	switch name {
	case probe.VarQueue:
		return r.keys.Queue(), true
	case probe.VarVersion:
		return wire.VersionRecord, true
	case probe.VarSemver:
		return Version, true
	case probe.VarBundle:
		return wire.BundleDigest, true
	}
	kind, arg, _ := strings.Cut(name, ":")
	switch kind {
	case probe.KindKey:
		return r.keys.Key(arg)
	case probe.KindRow:
		id, ok := r.id(arg)
		if !ok {
			return "", false
		}
		row, err := r.keys.Row(id)
		return row, err == nil
	case probe.KindReserve:
		k, err := wire.ReserveKey(arg, r.keys.Queue())
		return k, err == nil
	case probe.KindField:
		return wire.FieldByRole(arg)
	case probe.KindState:
		s, ok := wire.ParseState(arg)
		return string(s), ok
	}
	id, ok := r.id(name)
	return id.String(), ok
}

// RunScript runs a script of the bundle on the scratch queue. The fence
// script is refused, unsent: it writes the version record and the bundle
// identity.
func (r *probeRuntime) RunScript(ctx context.Context, name string, args map[string]string) rueidis.RedisResult {
	s := wire.ScriptNamed(name)
	if s == nil {
		return rueidis.NewErrorResult(errorf("no script %q in the bundle", name))
	}
	if s == wire.ScriptFence {
		return rueidis.NewErrorResult(errorf("not run: script %s writes %s and %s, which a probe only reads", name, wire.KeyVersion, wire.KeyBundle))
	}
	// The first row key takes the row of the first id argument (the job a
	// script moves); later row keys, a repeated group run with one entry,
	// take the row of the last (the repeated ids' one value).
	argv := make([]string, len(s.Argv))
	first, last := "", ""
	for i, a := range s.Argv {
		switch s.ArgTypes[i] {
		case "prefix":
			argv[i] = r.keys.RowPrefix()
		case "id":
			if first == "" {
				first = args[a]
			}
			last = args[a]
			argv[i] = last
		default:
			argv[i] = args[a]
		}
	}
	keys := make([]string, len(s.Keys))
	id := first
	for i, typ := range s.KeyTypes {
		if member, ok := strings.CutPrefix(typ, "reserve:"); ok {
			k, err := wire.ReserveKey(member, r.keys.Queue())
			if err != nil {
				return rueidis.NewErrorResult(err)
			}
			keys[i] = k
		} else if k, ok := r.keys.Key(typ); ok {
			keys[i] = k
		} else {
			parsed, err := ParseID(id)
			if err != nil {
				return rueidis.NewErrorResult(err)
			}
			if keys[i], err = r.keys.Row(parsed); err != nil {
				return rueidis.NewErrorResult(err)
			}
			id = last
		}
	}
	return s.Lua().Exec(ctx, r.p.c.rc, keys, argv)
}

// Do sends one command of a probe step when the server's COMMAND INFO
// calls it read-only, or when every key it names (COMMAND GETKEYS) belongs
// to the scratch queue. Anything else (a key of the fence, a key outside
// the scratch queue, a keyless write such as FLUSHALL, a command the server
// does not know) is not sent, and the check fails saying so.
func (r *probeRuntime) Do(ctx context.Context, cmd []string) rueidis.RedisResult {
	if len(cmd) == 0 {
		return rueidis.NewErrorResult(errors.New("an empty command"))
	}
	rc := r.p.c.rc
	ro, err := r.p.isReadOnly(ctx, cmd[0])
	if err != nil {
		return rueidis.NewErrorResult(errorf("not sent: the server did not say whether %s writes: %w", cmd[0], err))
	}
	if !ro {
		keys, err := rc.Do(ctx, rc.B().Arbitrary(append([]string{"COMMAND", "GETKEYS"}, cmd...)...).Build()).AsStrSlice()
		if err != nil {
			return rueidis.NewErrorResult(errorf("not sent: %s writes, and the server did not say which keys: %w", cmd[0], err))
		}
		if len(keys) == 0 {
			return rueidis.NewErrorResult(errorf("not sent: %s writes and names no key of the probe's scratch queue", cmd[0]))
		}
		for _, k := range keys {
			if !r.owns(k) {
				return rueidis.NewErrorResult(errorf("not sent: %s would write %s, outside the probe's scratch queue", cmd[0], k))
			}
		}
	}
	return rc.Do(ctx, rc.B().Arbitrary(cmd...).Build())
}

// owns reports whether key belongs to the probe's scratch queue: a key
// Close deletes.
func (r *probeRuntime) owns(key string) bool {
	if slices.Contains(r.scratch, key) {
		return true
	}
	for _, id := range r.ids {
		if row, _ := r.keys.Row(id); row == key {
			return true
		}
	}
	return false
}

// isReadOnly asks the server whether a command only reads (COMMAND INFO:
// flagged readonly and not write), once per command name and run.
func (p *prober) isReadOnly(ctx context.Context, name string) (bool, error) {
	name = strings.ToLower(name)
	p.mu.Lock()
	ro, ok := p.readOnly[name]
	p.mu.Unlock()
	if ok {
		return ro, nil
	}
	rc := p.c.rc
	arr, err := rc.Do(ctx, rc.B().CommandInfo().CommandName(name).Build()).ToArray()
	if err != nil {
		return false, err
	}
	if len(arr) != 1 {
		return false, errorf("COMMAND INFO answered %d entries", len(arr))
	}
	info, err := arr[0].ToArray()
	if err != nil || len(info) < 3 {
		return false, errorf("the server does not know %s", name)
	}
	flags, err := info[2].AsStrSlice()
	if err != nil {
		return false, err
	}
	ro = slices.Contains(flags, "readonly") && !slices.Contains(flags, "write")
	p.mu.Lock()
	p.readOnly[name] = ro
	p.mu.Unlock()
	return ro, nil
}

func (r *probeRuntime) ReplyElements(script string) []string {
	s := wire.ScriptNamed(script)
	if s == nil {
		return nil
	}
	return s.ReplyElements()
}

// FenceAdmits reports whether this package's fence admits a version record
// (JudgeVersionRecord: current or ahead).
func (r *probeRuntime) FenceAdmits(record string) bool {
	return JudgeVersionRecord(record).Admitted()
}

// Close deletes what the probe wrote: the scratch queue's keys, the rows of
// every id it minted, the reserve members that name the queue, and every
// lock field naming the queue that was absent before the probe (one a
// failed probe did not release). One command per key, so that a cluster
// client is spared any cross-slot question.
func (r *probeRuntime) Close(ctx context.Context) error {
	rc := r.p.c.rc
	keys := slices.Clone(r.scratch)
	for _, name := range r.order {
		row, _ := r.keys.Row(r.ids[name])
		keys = append(keys, row)
	}
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = rc.B().Del().Key(k).Build()
	}
	for _, res := range rc.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	for _, f := range queueLocks(r.keys.Queue()) {
		if r.held[f] {
			continue
		}
		n, err := rc.Do(ctx, rc.B().Hexists().Key(wire.KeyLocks).Field(f).Build()).AsInt64()
		if err != nil {
			return err
		}
		if n > 0 {
			if err := rc.Do(ctx, rc.B().Hdel().Key(wire.KeyLocks).Field(f).Build()).Error(); err != nil {
				return err
			}
		}
	}
	return nil
}
