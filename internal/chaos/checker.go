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
// queue's sets hold it. KEYS: the queue's n sets, then the rows; ARGV[1]:
// n; ARGV[2..]: the ids of the rows, in order. It answers, per id, the
// row's HGETALL and a 0/1 membership per set.
var checkScript = rueidis.NewLuaScript(`
local n = tonumber(ARGV[1])
local out = {}
for i = n + 1, #KEYS do
  local id = ARGV[i - n + 1]
  local member = {}
  for s = 1, n do
    if redis.call('ZSCORE', KEYS[s], id) then member[s] = 1 else member[s] = 0 end
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
		var cursor uint64
		for {
			e, err := c.rc.Do(ctx, c.rc.B().Zscan().Key(q.Set(s)).Cursor(cursor).Count(500).Build()).AsScanEntry()
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
	keys := make([]string, 0, len(sets)+len(ids))
	for _, s := range sets {
		keys = append(keys, q.Set(s))
	}
	args := make([]string, 0, 1+len(ids))
	args = append(args, strconv.Itoa(len(sets)))
	for _, id := range ids {
		keys = append(keys, q.RowPrefix()+id)
		args = append(args, id)
	}
	items, err := checkScript.Exec(ctx, c.rc, keys, args).ToArray()
	if err != nil {
		return fmt.Errorf("chaos: checker: the check script: %w", err)
	}
	if len(items) != len(ids) {
		return fmt.Errorf("chaos: checker: %d answers for %d ids", len(items), len(ids))
	}
	for i, it := range items {
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
			ids, err := c.rc.Do(ctx, c.rc.B().Zrange().Key(q.Set(s)).Min("0").Max("-1").Build()).AsStrSlice()
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
