package live

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/probe"
)

// The closed grammar's class, hole, key-slot and argument vocabulary. The
// model fixes these words (gen/model resolves a manifest only when its key
// classes are exactly queue, job and reserve with these holes); the
// manifest fills in everything else.
const (
	classQueue   = "queue"
	classReserve = "reserve"
	holeQueue    = "queue"
	holeType     = "type"
	holeID       = "id"
	holeMember   = "member"
	slotReserve  = "reserve" // model.ScriptKey.Type of a reserve slot
	argPrefix    = "prefix"  // model.Arg.Type of the row prefix
	argID        = "id"      // model.Arg.Type of an id
	redisHash    = "hash"
)

// The snowflake fields the model's id canon names (model.IDCanon.ParseID).
const (
	fieldTime     = "time"
	fieldNode     = "node"
	fieldSequence = "sequence"
)

// machine is everything Run derives from the model once: key classes,
// scripts, the fence and the id minter.
type machine struct {
	p        *model.Protocol
	queue    model.KeyClass
	job      model.KeyClass
	reserve  model.KeyClass
	queueRE  *regexp.Regexp
	scripts  map[string]*script
	fence    *Fence
	mint     *minter
	mu       sync.Mutex
	readOnly map[string]bool // command name -> the server says it only reads
}

// script is a model script with its rendered Lua.
type script struct {
	model.Script
	lua    *rueidis.Lua
	fenced bool // it writes a key of the fence
}

func newMachine(p *model.Protocol) (*machine, error) {
	b, err := bundle.Render(p)
	if err != nil {
		return nil, err
	}
	m := &machine{p: p, scripts: map[string]*script{}, readOnly: map[string]bool{}}
	var ok [3]bool
	m.queue, ok[0] = p.KeyClass(classQueue)
	row, _ := p.KeyType(p.Row.Key)
	m.job, ok[1] = p.KeyClass(row.Class)
	m.reserve, ok[2] = p.KeyClass(classReserve)
	if !ok[0] || !ok[1] || !ok[2] {
		return nil, errors.New("live: the model lacks a key class of the closed grammar")
	}
	m.queueRE, err = regexp.Compile("^(?:" + p.Queues.Pattern + ")$")
	if err != nil {
		return nil, fmt.Errorf("live: queue pattern: %w", err)
	}
	if m.fence, err = NewFence(p, b); err != nil {
		return nil, err
	}
	for i, s := range p.Scripts {
		sc := &script{Script: s, lua: rueidis.NewLuaScript(b.Scripts[i].Source), fenced: s.Name == m.fence.Script}
		m.scripts[s.Name] = sc
	}
	if m.mint, err = newMinter(p.IDs); err != nil {
		return nil, err
	}
	return m, nil
}

// checkQueue refuses a queue name outside the manifest's queue grammar.
func (m *machine) checkQueue(q string) error {
	if len(q) > m.p.Queues.MaxLength || !m.queueRE.MatchString(q) {
		return fmt.Errorf("queue name %q is malformed: a queue name must match %s (the manifest's queue pattern), so that it is the hashtag of the queue's keys", q, m.p.Queues.Pattern)
	}
	return nil
}

// queueKey is the key of a per-queue key type of queue q.
func (m *machine) queueKey(q, typ string) (string, bool) {
	t, ok := m.p.KeyType(typ)
	if !ok || t.Class != m.queue.Name {
		return "", false
	}
	return model.Shape(m.queue.Parts, map[string]string{holeQueue: q, holeType: t.Name}), true
}

// queueKeys are every per-queue key of q, in manifest order.
func (m *machine) queueKeys(q string) []string {
	var keys []string
	for _, t := range m.p.KeyTypes {
		if k, ok := m.queueKey(q, t.Name); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// rowKey is the key of id's row in queue q.
func (m *machine) rowKey(q, id string) string {
	return model.Shape(m.job.Parts, map[string]string{holeQueue: q, holeID: id})
}

// rowPrefix is the row key of queue q without the id, as scripts that
// reach rows of ids they pop take it.
func (m *machine) rowPrefix(q string) string {
	parts := m.job.Parts
	for i, pt := range parts {
		if pt.Hole == holeID {
			parts = parts[:i]
			break
		}
	}
	return model.Shape(parts, map[string]string{holeQueue: q})
}

// memberKey is the key of a reserve member; q fills a queue hole.
func (m *machine) memberKey(mem model.Member, q string) string {
	return model.Shape(m.reserve.Parts, map[string]string{holeMember: model.Shape(mem.Parts, map[string]string{holeQueue: q})})
}

// scratchKeys are the keys a probe on queue q may write and Close deletes,
// rows aside: the queue's keys and the reserve members that name it.
func (m *machine) scratchKeys(q string) []string {
	keys := m.queueKeys(q)
	for _, mem := range m.p.Reserve {
		if mem.HasQueue() {
			keys = append(keys, m.memberKey(mem, q))
		}
	}
	return keys
}

// fieldRef is one field of a hash.
type fieldRef struct{ key, field string }

// queueFields are the fields of hash reserve members that name queue q
// (such as the probe lock): the only places outside the scratch queue a
// probe may write.
func (m *machine) queueFields(q string) []fieldRef {
	var out []fieldRef
	for _, mem := range m.p.Reserve {
		if mem.HasQueue() || mem.Redis != redisHash {
			continue
		}
		for _, f := range mem.Fields {
			holes := 0
			queue := false
			for _, pt := range f.Parts {
				if pt.Hole != "" {
					holes++
					queue = queue || pt.Hole == holeQueue
				}
			}
			if holes == 1 && queue {
				out = append(out, fieldRef{m.memberKey(mem, ""), model.Shape(f.Parts, map[string]string{holeQueue: q})})
			}
		}
	}
	return out
}

// open starts a probe's runtime on a fresh scratch queue: one none of
// whose keys exists.
func (m *machine) open(ctx context.Context, rc rueidis.Client) (*runtime, error) {
	work := m.p.WorkKind().Name
	for try := 0; try < 5; try++ {
		q := ScratchPrefix + strings.ToLower(m.mint.next(work))
		if m.checkQueue(q) != nil {
			return nil, fmt.Errorf("the scratch queue name %q is outside the manifest's queue pattern %s", q, m.p.Queues.Pattern)
		}
		taken := false
		for _, k := range m.scratchKeys(q) {
			n, err := rc.Do(ctx, rc.B().Exists().Key(k).Build()).AsInt64()
			if err != nil {
				return nil, fmt.Errorf("checking the scratch key %s: %w", k, err)
			}
			taken = taken || n > 0
		}
		if taken {
			continue
		}
		r := &runtime{m: m, rc: rc, queue: q, ids: map[string]string{}, held: map[fieldRef]bool{}}
		for _, f := range m.queueFields(q) {
			n, err := rc.Do(ctx, rc.B().Hexists().Key(f.key).Field(f.field).Build()).AsInt64()
			// Unreadable (another type, no permission) counts as held: Close
			// never removes a field it has not seen absent.
			r.held[f] = err != nil || n > 0
		}
		return r, nil
	}
	return nil, errors.New("found no fresh scratch queue in 5 tries")
}

// runtime is one probe's scratch queue and ids: a probe.Runtime built
// from the model alone.
type runtime struct {
	m     *machine
	rc    rueidis.Client
	queue string
	ids   map[string]string // id variable -> minted id
	held  map[fieldRef]bool // queue fields present before the probe
	order []string          // id variables in mint order
}

var _ probe.Runtime = (*runtime)(nil)

// id returns the id of an id variable: a registered kind in lower case with
// an optional digit to tell several apart (job, job2, ord), minted on
// first use.
func (r *runtime) id(name string) (string, bool) {
	if id, ok := r.ids[name]; ok {
		return id, true
	}
	kind := lowerKind(name)
	if len(kind) != r.m.p.IDs.KindLength {
		return "", false
	}
	for _, k := range r.m.p.Kinds {
		if k.Name == kind {
			id := r.m.mint.next(kind)
			r.ids[name] = id
			r.order = append(r.order, name)
			return id, true
		}
	}
	return "", false
}

// Lookup resolves the placeholder vocabulary of sdk/go/probe from the model.
func (r *runtime) Lookup(name string) (string, bool) {
	f := r.m.fence
	switch name {
	case probe.VarQueue:
		return r.queue, true
	case probe.VarVersion:
		return f.Record, true
	case probe.VarSemver:
		return f.Semver, true
	case probe.VarBundle:
		return f.Digest, true
	}
	kind, arg, _ := strings.Cut(name, ":")
	p := r.m.p
	switch kind {
	case probe.KindKey:
		return r.m.queueKey(r.queue, arg)
	case probe.KindRow:
		id, ok := r.id(arg)
		if !ok {
			return "", false
		}
		return r.m.rowKey(r.queue, id), true
	case probe.KindReserve:
		mem, ok := p.Member(arg)
		if !ok {
			return "", false
		}
		return r.m.memberKey(mem, r.queue), true
	case probe.KindField:
		fl, ok := p.Field(arg)
		return fl.Name, ok
	case probe.KindState:
		s, ok := p.State(arg)
		return s.Name, ok
	}
	return r.id(name)
}

// RunScript runs a script of the bundle with EVALSHA, falling back to EVAL
// on NOSCRIPT. Its KEYS are built from the model's key classes: the
// scratch queue's keys, the row of its id argument, reserve members. The
// fence script is never run here.
func (r *runtime) RunScript(ctx context.Context, name string, args map[string]string) rueidis.RedisResult {
	if s, ok := r.m.scripts[name]; ok && s.fenced {
		return rueidis.NewErrorResult(fmt.Errorf("not run: script %s writes %s and %s; the prober fences only a keyspace without a version record, and only with -claim", name, r.m.fence.VersionKey, r.m.fence.BundleKey))
	}
	return r.m.exec(ctx, r.rc, r.queue, name, args)
}

// exec runs a script of the bundle on queue q with EVALSHA, falling back
// to EVAL on NOSCRIPT. Its KEYS are built from the model's key classes:
// the queue's keys, the row of its id argument, reserve members; its ARGV
// are args by name, the row prefix filled in. The fence script is never
// run here.
func (m *machine) exec(ctx context.Context, rc rueidis.Client, q, name string, args map[string]string) rueidis.RedisResult {
	s, ok := m.scripts[name]
	if !ok {
		return rueidis.NewErrorResult(fmt.Errorf("no script %q in the bundle", name))
	}
	if s.fenced {
		return rueidis.NewErrorResult(fmt.Errorf("not run: script %s writes %s and %s, which only the fence may write", name, m.fence.VersionKey, m.fence.BundleKey))
	}
	argv := make([]string, len(s.Argv))
	id := ""
	for i, a := range s.Argv {
		switch a.Type {
		case argPrefix:
			argv[i] = m.rowPrefix(q)
		case argID:
			id = args[a.Name]
			argv[i] = id
		default:
			argv[i] = args[a.Name]
		}
	}
	keys := make([]string, len(s.Keys))
	for i, k := range s.Keys {
		if k.Type == slotReserve {
			mem, ok := m.p.Member(k.Member)
			if !ok {
				return rueidis.NewErrorResult(fmt.Errorf("script %s: no reserve member %q", name, k.Member))
			}
			keys[i] = m.memberKey(mem, q)
		} else if key, ok := m.queueKey(q, k.Type); ok {
			keys[i] = key
		} else {
			if _, err := m.p.IDs.ParseID(id); err != nil {
				return rueidis.NewErrorResult(err)
			}
			keys[i] = m.rowKey(q, id)
		}
	}
	return s.lua.Exec(ctx, rc, keys, argv)
}

// Do sends one command of a probe step. Probes observe with commands and
// act with scripts, so a command is sent when the server's COMMAND INFO
// calls it read-only, or when every key it names (COMMAND GETKEYS) belongs
// to the probe's scratch queue. Anything else (a key of the fence, a key
// outside the scratch queue, a keyless write such as FLUSHALL) is not sent,
// and the check fails saying so.
func (r *runtime) Do(ctx context.Context, cmd []string) rueidis.RedisResult {
	if len(cmd) == 0 {
		return rueidis.NewErrorResult(errors.New("an empty command"))
	}
	ro, err := r.m.isReadOnly(ctx, r.rc, cmd[0])
	if err != nil {
		return rueidis.NewErrorResult(fmt.Errorf("not sent: the server did not say whether %s writes: %w", cmd[0], err))
	}
	if !ro {
		keys, err := r.rc.Do(ctx, r.rc.B().Arbitrary(append([]string{"COMMAND", "GETKEYS"}, cmd...)...).Build()).AsStrSlice()
		if err != nil {
			return rueidis.NewErrorResult(fmt.Errorf("not sent: %s writes, and the server did not say which keys: %w", cmd[0], err))
		}
		if len(keys) == 0 {
			return rueidis.NewErrorResult(fmt.Errorf("not sent: %s writes and names no key of the probe's scratch queue", cmd[0]))
		}
		for _, k := range keys {
			if !r.owns(k) {
				return rueidis.NewErrorResult(fmt.Errorf("not sent: %s would write %s, outside the probe's scratch queue", cmd[0], k))
			}
		}
	}
	return r.rc.Do(ctx, r.rc.B().Arbitrary(cmd...).Build())
}

// owns reports whether key belongs to the probe's scratch queue: a key
// Close deletes.
func (r *runtime) owns(key string) bool {
	for _, k := range r.m.scratchKeys(r.queue) {
		if k == key {
			return true
		}
	}
	for _, id := range r.ids {
		if r.m.rowKey(r.queue, id) == key {
			return true
		}
	}
	return false
}

// isReadOnly asks the server whether a command only reads (COMMAND INFO:
// flagged readonly and not write), once per command name.
func (m *machine) isReadOnly(ctx context.Context, rc rueidis.Client, name string) (bool, error) {
	name = strings.ToLower(name)
	m.mu.Lock()
	ro, ok := m.readOnly[name]
	m.mu.Unlock()
	if ok {
		return ro, nil
	}
	arr, err := rc.Do(ctx, rc.B().CommandInfo().CommandName(name).Build()).ToArray()
	if err != nil {
		return false, err
	}
	if len(arr) != 1 {
		return false, fmt.Errorf("COMMAND INFO answered %d entries", len(arr))
	}
	info, err := arr[0].ToArray()
	if err != nil || len(info) < 3 {
		return false, fmt.Errorf("the server does not know %s", name)
	}
	flags, err := info[2].AsStrSlice()
	if err != nil {
		return false, err
	}
	ro = contains(flags, "readonly") && !contains(flags, "write")
	m.mu.Lock()
	m.readOnly[name] = ro
	m.mu.Unlock()
	return ro, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ReplyElements names the elements of a script's array reply.
func (r *runtime) ReplyElements(name string) []string {
	s, ok := r.m.scripts[name]
	if !ok {
		return nil
	}
	var names []string
	for _, e := range s.Reply.Elements {
		names = append(names, e.Name)
	}
	return names
}

// FenceAdmits reports whether this version's fence admits a record: this
// version, or a higher minor or patch of its major.
func (r *runtime) FenceAdmits(record string) bool {
	v := r.m.fence.Judge(record)
	return v == Current || v == Ahead
}

// Close deletes what the probe wrote: the scratch queue's keys, the rows
// of every id it minted, the reserve members that name the queue, and any
// reserve field naming the queue that was absent before the probe (a lock
// a failed probe did not release). One command per key, so that a cluster
// client is spared any cross-slot question.
func (r *runtime) Close(ctx context.Context) error {
	keys := r.m.scratchKeys(r.queue)
	for _, name := range r.order {
		keys = append(keys, r.m.rowKey(r.queue, r.ids[name]))
	}
	cmds := make(rueidis.Commands, 0, len(keys))
	for _, k := range keys {
		cmds = append(cmds, r.rc.B().Del().Key(k).Build())
	}
	for _, res := range r.rc.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	for f, held := range r.held {
		if held {
			continue
		}
		n, err := r.rc.Do(ctx, r.rc.B().Hexists().Key(f.key).Field(f.field).Build()).AsInt64()
		if err != nil {
			return err
		}
		if n > 0 {
			if err := r.rc.Do(ctx, r.rc.B().Hdel().Key(f.key).Field(f.field).Build()).Error(); err != nil {
				return err
			}
		}
	}
	return nil
}

// minter mints ids with the model's canon from a random snowflake node.
// Probe ids live only in their scratch queue, which no other client uses,
// so the node is not leased from the reserve (leasing would write it).
type minter struct {
	mu                sync.Mutex
	canon             model.IDCanon
	tf, nf, sf        model.Bitfield
	node, seq, maxSeq uint64
	lastMS, maxMS     int64
}

func newMinter(c model.IDCanon) (*minter, error) {
	m := &minter{canon: c}
	var ok [3]bool
	m.tf, ok[0] = c.Bitfield(fieldTime)
	m.nf, ok[1] = c.Bitfield(fieldNode)
	m.sf, ok[2] = c.Bitfield(fieldSequence)
	if !ok[0] || !ok[1] || !ok[2] {
		return nil, errors.New("live: the id canon lacks a time, node or sequence field")
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	m.node = binary.LittleEndian.Uint64(b[:]) & (1<<m.nf.Bits - 1)
	m.maxSeq = 1<<m.sf.Bits - 1
	m.maxMS = int64(1)<<m.tf.Bits - 1
	m.lastMS = -1
	return m, nil
}

// next mints the next id of kind: milliseconds since the canon's epoch,
// the node, and a sequence that borrows the next millisecond when it runs
// out, so ids are unique and increasing.
func (m *minter) next(kind string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := max(time.Since(m.canon.Epoch).Milliseconds(), 0)
	switch {
	case ms <= m.lastMS && m.seq < m.maxSeq:
		ms = m.lastMS
		m.seq++
	case ms <= m.lastMS:
		ms = m.lastMS + 1
		m.seq = 0
	default:
		m.seq = 0
	}
	m.lastMS = ms
	v := uint64(ms&m.maxMS)<<m.tf.Shift | m.node<<m.nf.Shift | m.seq<<m.sf.Shift
	return m.canon.FormatID(kind, v)
}
