package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// checkScript reads, atomically, the row of each id and which of the
// queue's sets hold it, in either layout (echomq 2.7.0): while the queue
// has a policy its active key holds the tripwire, a string, and the leased
// jobs are in the running set, which then stands for the active set.
// KEYS: the queue's n sets, the running set, the policy hash, then the
// rows; ARGV[1]: n; ARGV[2]: the index of the active set among the sets
// (from 1); ARGV[3..]: the ids of the rows, in order. It answers first the
// layout — the types of the active and running keys and the policy hash's
// length — then, per id, the row's HGETALL and a 0/1 membership per set.
var checkScript = rueidis.NewLuaScript(`
local n, a = tonumber(ARGV[1]), tonumber(ARGV[2])
local sets = {}
for s = 1, n do sets[s] = KEYS[s] end
local at = redis.call('TYPE', KEYS[a])['ok']
local rt = redis.call('TYPE', KEYS[n + 1])['ok']
if at == 'string' then sets[a] = KEYS[n + 1] end
local out = {{at, rt, redis.call('HLEN', KEYS[n + 2])}}
for i = n + 3, #KEYS do
  local id = ARGV[i - n]
  local member = {}
  for s = 1, n do
    if redis.call('ZSCORE', sets[s], id) then member[s] = 1 else member[s] = 0 end
  end
  out[#out + 1] = {redis.call('HGETALL', KEYS[i]), member}
end
return out
`)

// checkBatch is the most ids one check script reads.
const checkBatch = 200

// Checker watches the protocol's invariants while a load runs. Each pass
// collects the ids of every queue (SCAN of the row keys on every node and
// ZSCAN of every set) and reads each id's row and set memberships in one
// atomic script, so that no transition is seen half done. It checks that
// a row is a hash of exactly the row's fields, that its state names
// exactly the one set holding its id, that no set holds an id without a
// row, and that the attempts of an id never decrease (a row retired and
// then seen again counts as a decrease).
type Checker struct {
	rc     rueidis.Client
	queues []wire.QueueKeys
	// Annotate, when set, adds a note to a violation about id (such as
	// "the id was pushed again after a failed push").
	Annotate func(id string) string

	mu         sync.Mutex
	maxAtt     map[string]int64
	gone       map[string]bool // ids whose row was retired after it was seen
	present    map[string]bool // ids whose row the current pass saw
	seenV      map[string]bool
	violations []string
	passes     int64
	checked    int64
	errs       int64
	lastErr    error
	// classicChecks and policyChecks count the check batches read in each
	// layout.
	classicChecks, policyChecks int64
}

// NewChecker connects a checker to the server (or cluster nodes) at addrs
// for the queues.
func NewChecker(addrs []string, queues ...wire.QueueKeys) (*Checker, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true})
	if err != nil {
		return nil, err
	}
	return &Checker{rc: rc, queues: queues, maxAtt: map[string]int64{}, gone: map[string]bool{}, present: map[string]bool{}, seenV: map[string]bool{}}, nil
}

// Close closes the checker's connections.
func (c *Checker) Close() { c.rc.Close() }

// Run makes passes, pausing every between them, until ctx ends. A pass
// that fails (the server is down or frozen) is counted and retried.
func (c *Checker) Run(ctx context.Context, every time.Duration) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := c.Pass(pctx); err != nil && ctx.Err() == nil {
			c.mu.Lock()
			c.errs++
			c.lastErr = err
			c.mu.Unlock()
		}
		cancel()
		sleepCtx(ctx, every)
	}
}

// Pass checks every id of every queue once. A row seen before and not
// found by a whole pass was absent at some point of it, so it was retired:
// seeing it again later is a violation.
func (c *Checker) Pass(ctx context.Context) error {
	before, err := c.runIDs(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.present = map[string]bool{}
	c.mu.Unlock()
	for _, q := range c.queues {
		ids, err := c.ids(ctx, q)
		if err != nil {
			return err
		}
		for i := 0; i < len(ids); i += checkBatch {
			if err := c.check(ctx, q, ids[i:min(i+checkBatch, len(ids))]); err != nil {
				return err
			}
		}
	}
	after, err := c.runIDs(ctx)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.passes++
	if after != before {
		// A server restarted during the pass: its SCAN cursor may have
		// skipped rows, so absence proves nothing.
		return nil
	}
	for id := range c.maxAtt {
		if !c.present[id] {
			c.gone[id] = true
		}
	}
	return nil
}

// runIDs returns the run ids of the nodes, which change when a server
// restarts.
func (c *Checker) runIDs(ctx context.Context) (string, error) {
	var ids []string
	for addr, node := range c.rc.Nodes() {
		info, err := node.Do(ctx, node.B().Info().Section("server").Build()).ToString()
		if err != nil {
			return "", fmt.Errorf("chaos: checker: INFO server: %w", err)
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
				ids = append(ids, addr+"="+v)
			}
		}
	}
	slices.Sort(ids)
	return strings.Join(ids, ","), nil
}

// ids collects the ids of q: the rows' ids on every node and the members
// of every set.
func (c *Checker) ids(ctx context.Context, q wire.QueueKeys) ([]string, error) {
	seen := map[string]bool{}
	prefix := q.RowPrefix()
	for _, node := range c.rc.Nodes() {
		var cursor uint64
		for {
			e, err := node.Do(ctx, node.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
			if err != nil {
				return nil, fmt.Errorf("chaos: checker: SCAN: %w", err)
			}
			for _, k := range e.Elements {
				seen[strings.TrimPrefix(k, prefix)] = true
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	for _, s := range wire.Sets() {
		key, err := c.setKey(ctx, q, s)
		if err != nil {
			return nil, err
		}
		var cursor uint64
		for {
			e, err := c.rc.Do(ctx, c.rc.B().Zscan().Key(key).Cursor(cursor).Count(500).Build()).AsScanEntry()
			if err != nil {
				return nil, fmt.Errorf("chaos: checker: ZSCAN %s: %w", s, err)
			}
			for i := 0; i < len(e.Elements); i += 2 {
				seen[e.Elements[i]] = true
			}
			if cursor = e.Cursor; cursor == 0 {
				break
			}
		}
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// check reads ids atomically and judges what it read.
func (c *Checker) check(ctx context.Context, q wire.QueueKeys, ids []string) error {
	sets := wire.Sets()
	keys := make([]string, 0, len(sets)+2+len(ids))
	active := 0
	for i, s := range sets {
		keys = append(keys, q.Set(s))
		if s == emq.SetActive {
			active = i + 1
		}
	}
	keys = append(keys, q.Running, q.Policy)
	args := make([]string, 0, 2+len(ids))
	args = append(args, strconv.Itoa(len(sets)), strconv.Itoa(active))
	for _, id := range ids {
		keys = append(keys, q.RowPrefix()+id)
		args = append(args, id)
	}
	items, err := checkScript.Exec(ctx, c.rc, keys, args).ToArray()
	if err != nil {
		return fmt.Errorf("chaos: checker: the check script: %w", err)
	}
	if len(items) != 1+len(ids) {
		return fmt.Errorf("chaos: checker: %d answers for %d ids", len(items)-1, len(ids))
	}
	layout, err := items[0].ToArray()
	if err != nil || len(layout) != 3 {
		return fmt.Errorf("chaos: checker: the layout: %v", err)
	}
	at, _ := layout[0].ToString()
	rt, _ := layout[1].ToString()
	policies, _ := layout[2].AsInt64()
	c.judgeLayout(q.Queue(), at, rt, policies)
	for i, it := range items[1:] {
		pair, err := it.ToArray()
		if err != nil || len(pair) != 2 {
			return fmt.Errorf("chaos: checker: answer %d: %v", i, err)
		}
		flat, err1 := pair[0].AsStrSlice()
		member, err2 := pair[1].AsIntSlice()
		if err1 != nil || err2 != nil || len(member) != len(sets) {
			return fmt.Errorf("chaos: checker: answer %d: %v %v", i, err1, err2)
		}
		row := map[string]string{}
		for k := 0; k+1 < len(flat); k += 2 {
			row[flat[k]] = flat[k+1]
		}
		var in []emq.Set
		for k, m := range member {
			if m == 1 {
				in = append(in, sets[k])
			}
		}
		c.judge(q.Queue(), ids[i], len(flat)/2, row, in)
	}
	return nil
}

// judgeLayout checks a queue's layout, read atomically: the classic one
// (the active key a set or absent, no running set, no policy) or the
// policy layout (the active key the tripwire, a string, and a policy
// record; the running set, when there are leased jobs). It counts the
// checks made in each layout.
func (c *Checker) judgeLayout(queue, active, running string, policies int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case active == wire.ActiveTripwireType:
		c.policyChecks++
		if policies == 0 {
			c.violate(queue, "-", "the active key holds the tripwire, yet the queue has no policy record")
		}
		if running != "zset" && running != "none" {
			c.violate(queue, "-", fmt.Sprintf("the running key is a %s under the tripwire", running))
		}
	case active == "zset" || active == "none":
		c.classicChecks++
		if policies != 0 {
			c.violate(queue, "-", fmt.Sprintf("the queue has a policy record (%d fields), yet its active key is a %s, not the tripwire", policies, active))
		}
		if running != "none" {
			c.violate(queue, "-", fmt.Sprintf("the running key is a %s in the classic layout", running))
		}
	default:
		c.violate(queue, "-", fmt.Sprintf("the active key is a %s", active))
	}
}

// setKey returns the key of set s of q, reading the layout for the
// active set: under the tripwire its members are in the running set.
func (c *Checker) setKey(ctx context.Context, q wire.QueueKeys, s emq.Set) (string, error) {
	if s != emq.SetActive {
		return q.Set(s), nil
	}
	t, err := c.rc.Do(ctx, c.rc.B().Type().Key(q.Active).Build()).ToString()
	if err != nil {
		return "", fmt.Errorf("chaos: checker: TYPE of the active key: %w", err)
	}
	if t == wire.ActiveTripwireType {
		return q.Running, nil
	}
	return q.Active, nil
}

// Layouts returns how many batches the checker read in the classic layout
// and in the policy layout.
func (c *Checker) Layouts() (classic, policy int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.classicChecks, c.policyChecks
}

// judge checks one id's row and memberships, read atomically.
func (c *Checker) judge(queue, id string, nfields int, row map[string]string, in []emq.Set) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked++
	if nfields == 0 {
		for _, s := range in {
			c.violate(queue, id, fmt.Sprintf("set %s holds the id, which has no row", s))
		}
		return
	}
	c.present[id] = true
	fields := wire.RowFields()
	if nfields != len(fields) {
		c.violate(queue, id, fmt.Sprintf("the row has %d fields, not %d", nfields, len(fields)))
	}
	for _, f := range fields {
		if _, ok := row[f]; !ok {
			c.violate(queue, id, fmt.Sprintf("the row lacks field %s", f))
		}
	}
	state, ok := wire.ParseState(row[wire.FieldState])
	if !ok {
		c.violate(queue, id, fmt.Sprintf("the row's %s %q is not a state", wire.FieldState, row[wire.FieldState]))
	} else {
		want := state.Set()
		if !slices.Contains(in, want) {
			c.violate(queue, id, fmt.Sprintf("the row's state is %s, but set %s does not hold the id (in %v)", state, want, in))
		}
		for _, s := range in {
			if s != want {
				c.violate(queue, id, fmt.Sprintf("the row's state is %s, but set %s holds the id too", state, s))
			}
		}
	}
	att, err := strconv.ParseInt(row[wire.FieldToken], 10, 64)
	if err != nil {
		c.violate(queue, id, fmt.Sprintf("the row's %s %q is not a decimal", wire.FieldToken, row[wire.FieldToken]))
		return
	}
	prev, seen := c.maxAtt[id]
	switch {
	case seen && c.gone[id]:
		c.violate(queue, id, fmt.Sprintf("the row was retired, then seen again (%s %d, was %d)", wire.FieldToken, att, prev))
	case seen && att < prev:
		c.violate(queue, id, fmt.Sprintf("%s decreased from %d to %d", wire.FieldToken, prev, att))
	}
	delete(c.gone, id)
	if !seen || att > prev {
		c.maxAtt[id] = att
	}
}

func (c *Checker) violate(queue, id, what string) {
	v := fmt.Sprintf("queue %s, job %s: %s", queue, id, what)
	if c.Annotate != nil {
		if note := c.Annotate(id); note != "" {
			v += " (" + note + ")"
		}
	}
	if c.seenV[v] {
		return
	}
	c.seenV[v] = true
	c.violations = append(c.violations, v)
}

// Violations returns what the checker saw broken, each once, in the order
// seen.
func (c *Checker) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.violations...)
}

// MaxAttempts returns the highest attempts seen per id.
func (c *Checker) MaxAttempts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.maxAtt))
	for k, v := range c.maxAtt {
		out[k] = v
	}
	return out
}

// Stats returns how many passes completed, how many id checks were made,
// how many passes failed and the last failure.
func (c *Checker) Stats() (passes, checked, failed int64, last error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.passes, c.checked, c.errs, c.lastErr
}

// Final reads the members of every set of every queue: the set each id is
// in at the end (an id in several sets is a violation a pass reports).
func (c *Checker) Final(ctx context.Context) (map[string]emq.Set, error) {
	out := map[string]emq.Set{}
	for _, q := range c.queues {
		for _, s := range wire.Sets() {
			key, err := c.setKey(ctx, q, s)
			if err != nil {
				return nil, err
			}
			ids, err := c.rc.Do(ctx, c.rc.B().Zrange().Key(key).Min("0").Max("-1").Build()).AsStrSlice()
			if err != nil {
				return nil, fmt.Errorf("chaos: reading set %s: %w", s, err)
			}
			for _, id := range ids {
				out[id] = s
			}
		}
	}
	return out, nil
}

// Client returns the checker's connection, for the harness's own reads.
func (c *Checker) Client() rueidis.Client { return c.rc }
