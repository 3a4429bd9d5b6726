package emq_test

// Bad input against a real redis-server: what the SDK refuses before any
// command (malformed ids, hostile queue names), what it does with
// payloads from empty to past the server's bulk limit, what a foreign
// writer's wrong-type key does to every queue operation, and a keyspace
// fenced by another version.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// fixedNode is the snowflake node the clients of these tests take without
// a lease, so that no lock renewal runs while commands are counted.
const fixedNode = 5

func badClient(t *testing.T, srv *redistest.Server) *emq.Client {
	t.Helper()
	opt := options(srv)
	n := fixedNode
	opt.Node = &n
	c, err := emq.Connect(ctxT(t), opt)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// keyspace is every key of the server with its DUMP, read on a connection
// of its own.
func keyspace(t *testing.T, srv *redistest.Server) map[string]string {
	t.Helper()
	rc := rawClient(t, srv)
	ctx := ctxT(t)
	keys, err := rc.Do(ctx, rc.B().Keys().Pattern("*").Build()).AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	out := map[string]string{}
	for _, k := range keys {
		v, err := rc.Do(ctx, rc.B().Dump().Key(k).Build()).ToString()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		out[k] = v
	}
	return out
}

// restore makes the server hold exactly snap.
func restore(t *testing.T, srv *redistest.Server, snap map[string]string) {
	t.Helper()
	rc := rawClient(t, srv)
	ctx := ctxT(t)
	if err := rc.Do(ctx, rc.B().Flushall().Build()).Error(); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
	for k, v := range snap {
		if err := rc.Do(ctx, rc.B().Restore().Key(k).Ttl(0).SerializedValue(v).Build()).Error(); err != nil {
			t.Fatalf("RESTORE %s: %v", k, err)
		}
	}
}

// diffKeys names the keys that differ between two snapshots.
func diffKeys(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if w, ok := before[k]; !ok {
			out = append(out, "+"+k)
		} else if w != v {
			out = append(out, "~"+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, "-"+k)
		}
	}
	slices.Sort(out)
	return out
}

// commandStats is INFO commandstats: calls by command.
func commandStats(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q", line)
		}
		out[cmd] = n
	}
	return out
}

// sentSince returns the commands the server ran since CONFIG RESETSTAT,
// other than the statistics' own and the client's keep-alive PING.
func sentSince(t *testing.T, srv *redistest.Server) map[string]int64 {
	t.Helper()
	stats := commandStats(t, srv)
	for _, own := range []string{"config|resetstat", "info", "ping"} {
		delete(stats, own)
	}
	return stats
}

func resetStats(t *testing.T, srv *redistest.Server) {
	t.Helper()
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", err)
	}
}

// hostileQueueNames are queue names a caller may pass from outside: every
// one is outside the grammar.
func hostileQueueNames() map[string]string {
	return map[string]string{
		"empty":              "",
		"braces":             "a{b}",
		"closing brace":      "orders}",
		"opening brace":      "{orders",
		"second hashtag":     "a}:{b",
		"colon":              "a:b",
		"key injection":      "orders}:job:x",
		"newline":            "a\nb",
		"carriage return":    "orders\r",
		"NUL":                "orders\x00",
		"space":              "a b",
		"tab":                "a\tb",
		"capitals":           "Orders",
		"leading dash":       "-orders",
		"leading dot":        ".orders",
		"glob":               "orders*",
		"one byte too long":  strings.Repeat("q", wire.MaxQueueLength+1),
		"a megabyte":         strings.Repeat("q", 1<<20),
		"unicode letter":     "bestellungen-ü",
		"CJK":                "队列",
		"fullwidth braces":   "｛orders｝",
		"right-to-left mark": "orders\u202e",
		"zero-width joiner":  "or\u200dders",
		"invalid UTF-8":      "orders\xff",
	}
}

// TestBadInputRefusedBeforeAnyCommand: malformed ids and hostile queue
// names are refused with ErrID and ErrQueueName before any command reaches
// the server, as INFO commandstats counts after CONFIG RESETSTAT; a
// malformed page cursor with ErrArgument before any page is read; and
// nothing is written.
func TestBadInputRefusedBeforeAnyCommand(t *testing.T) {
	srv := redistest.Start(t)
	c := badClient(t, srv)
	ctx := ctxT(t)
	q := queue(t, c, "orders")
	good := mint(t, c, emq.WorkKind)
	if ok, err := q.Push(ctx, good, []byte("x")); err != nil || !ok {
		t.Fatalf("Push = %v, %v", ok, err)
	}
	before := keyspace(t, srv)
	resetStats(t, srv)

	// The only malformed ID value is the zero ID: every operation that
	// takes an id refuses it.
	var zero emq.ID
	errs := map[string]error{}
	_, errs["Enqueue"] = q.Enqueue(ctx, zero, []byte("x"))
	_, errs["EnqueueAt"] = q.EnqueueAt(ctx, zero, []byte("x"), time.Now())
	_, errs["Push"] = q.Push(ctx, zero, []byte("x"))
	_, errs["PushBatch"] = q.PushBatch(ctx, []emq.NewJob{{ID: mint(t, c, emq.WorkKind), Payload: []byte("a")}, {ID: zero, Payload: []byte("b")}})
	_, errs["Extend"] = q.Extend(ctx, zero, 1, time.Second)
	errs["Complete"] = q.Complete(ctx, zero, 1)
	_, errs["Retry"] = q.Retry(ctx, zero, 1, time.Second)
	errs["Bury"] = q.Bury(ctx, zero, 1)
	_, errs["Revive"] = q.Revive(ctx, zero)
	_, _, errs["Get"] = q.Get(ctx, zero)
	_, errs["Purge"] = q.Purge(ctx, zero)
	_, errs["MarshalText"] = zero.MarshalText()
	_, errs["json.Marshal"] = json.Marshal(struct{ ID emq.ID }{})
	_, errs["Row"] = q.Keys().Row(zero)
	for _, what := range slices.Sorted(maps.Keys(errs)) {
		err := errs[what]
		if !errors.Is(err, emq.ErrID) {
			t.Errorf("%s(zero ID) = %v; want ErrID", what, err)
			continue
		}
		t.Logf("%s(zero ID): %v", what, err)
	}
	// Hostile queue names.
	for _, what := range slices.Sorted(maps.Keys(hostileQueueNames())) {
		name := hostileQueueNames()[what]
		h, err := c.Queue(name)
		if !errors.Is(err, emq.ErrQueueName) || h != nil {
			t.Errorf("Queue(%s %q) = %v, %v; want ErrQueueName", what, name, h, err)
			continue
		}
		if strings.ContainsAny(err.Error(), "\r\n") || len(err.Error()) > 200 {
			t.Errorf("Queue(%s): the error is not one short line: %q", what, err)
		}
		if _, err := wire.KeyMigration(name); !errors.Is(err, emq.ErrQueueName) {
			t.Errorf("KeyMigration(%s) = %v; want ErrQueueName", what, err)
		}
		t.Logf("Queue(%s): %v", what, err)
	}

	if sent := sentSince(t, srv); len(sent) != 0 {
		t.Errorf("the refused calls reached the server: %v", sent)
	}

	// Page cursors are opaque: one that is not a page's is ErrArgument,
	// and no page is read. Page fences (ensure) before it checks the
	// cursor, so when the client has dialed a connection since its last
	// fence, the fence script runs first: the one command allowed here.
	resetStats(t, srv)
	for _, s := range wire.Sets() {
		for _, cur := range []emq.Cursor{"x", emq.Cursor(good.String() + "/" + good.String()), "1/", "/" + emq.Cursor(good.String()), "1.5/" + emq.Cursor(good.String()), "\n"} {
			if _, _, err := q.Page(ctx, s, cur, 10); !errors.Is(err, emq.ErrArgument) {
				t.Errorf("Page(%s, %q) = %v; want ErrArgument", s, cur, err)
			}
		}
	}
	sent := sentSince(t, srv)
	for _, fence := range []string{"evalsha", "eval", "get", "set", "hget", "hsetnx"} {
		delete(sent, fence) // the fence script and what it runs
	}
	if len(sent) != 0 {
		t.Errorf("the refused pages reached the server: %v", sent)
	}
	if d := diffKeys(before, keyspace(t, srv)); len(d) != 0 {
		t.Errorf("the refused calls changed the keyspace: %v", d)
	}
}

// TestBadInputPayloads: any bytes up to the server's proto-max-bulk-len
// (512 MB by default) go through unchanged, 64 MiB included. The SDK caps
// payloads at the limit it read at Connect, refusing a larger one with
// ErrPayloadTooLarge before sending (TestPayloadCap). A limit lowered
// after Connect — as here — is met by the server instead: nothing is
// written and the client carries on, but the refusal is a protocol error
// after which the server closes the connection, so the caller sees
// "Protocol error: invalid bulk length" or "connection reset by peer", and
// other commands in flight on the shared connection may fail with it.
func TestBadInputPayloads(t *testing.T) {
	srv := redistest.Start(t)
	c := badClient(t, srv)
	ctx := ctxT(t)
	q := queue(t, c, "payloads")
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	big := make([]byte, 64<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for _, tc := range []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"every byte", all},
		{"invalid UTF-8", []byte("\xff\xfe\xc0")},
		{"RESP framing", []byte("\r\n*1\r\n$4\r\nPING\r\n")},
		{"Lua and JSON", []byte(`"); redis.call('FLUSHALL') --{"a":1}`)},
		{"1 MiB", big[:1<<20]},
		{"64 MiB", big},
	} {
		id := mint(t, c, emq.WorkKind)
		start := time.Now()
		ok, err := q.Push(ctx, id, tc.payload)
		if err != nil || !ok {
			t.Fatalf("%s: Push = %v, %v", tc.name, ok, err)
		}
		pushed := time.Since(start)
		info, found, err := q.Get(ctx, id)
		if err != nil || !found || string(info.Payload) != string(tc.payload) {
			t.Fatalf("%s: Get = found %v, %v, %d bytes; want the %d bytes pushed", tc.name, found, err, len(info.Payload), len(tc.payload))
		}
		job, ok, err := q.Claim(ctx, time.Minute)
		if err != nil || !ok || job.ID != id || string(job.Payload) != string(tc.payload) {
			t.Fatalf("%s: Claim = %v, %v, %d bytes; want %v with the payload", tc.name, ok, err, len(job.Payload), id)
		}
		if err := q.Complete(ctx, job.ID, job.Token); err != nil {
			t.Fatalf("%s: Complete: %v", tc.name, err)
		}
		t.Logf("%s: %d bytes pushed in %v, round trip in %v", tc.name, len(tc.payload), pushed, time.Since(start))
	}

	// Past the server's bulk limit (lowered to its minimum, 1 MB, so that
	// the test need not allocate 512 MB): the server refuses the command.
	if _, err := srv.Do("CONFIG", "SET", "proto-max-bulk-len", strconv.Itoa(1<<20)); err != nil {
		t.Fatal(err)
	}
	before := keyspace(t, srv)
	id := mint(t, c, emq.WorkKind)
	ok, err := q.Push(ctx, id, big[:1<<20+1])
	if err == nil || ok {
		t.Fatalf("Push past proto-max-bulk-len = %v, %v; want the server's refusal", ok, err)
	}
	t.Logf("Push of %d bytes past proto-max-bulk-len: %v", 1<<20+1, err)
	if d := diffKeys(before, keyspace(t, srv)); len(d) != 0 {
		t.Errorf("the refused push changed the keyspace: %v", d)
	}
	// The client carries on: the next push is served.
	var small bool
	for i := 0; i < 50 && !small; i++ {
		small, err = q.Push(ctx, mint(t, c, emq.WorkKind), []byte("after"))
		if err != nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if !small {
		t.Fatalf("Push after the refusal: %v", err)
	}
	_, err = q.PushBatch(ctx, []emq.NewJob{{ID: mint(t, c, emq.WorkKind), Payload: []byte("ok")}, {ID: mint(t, c, emq.WorkKind), Payload: big[:1<<20+1]}})
	t.Logf("PushBatch with one payload past proto-max-bulk-len: %v", err)
	if err == nil {
		t.Error("PushBatch past proto-max-bulk-len succeeded")
	}
}

// op is one queue operation, run against a prepared keyspace.
type op struct {
	name    string
	scripts []*wire.Script // the scripts it runs; nil for plain commands
	keys    []string       // the key types it reads with plain commands
	run     func(ctx context.Context) error
}

// TestBadInputWrongType plants a key of the wrong type where each of the
// queue's keys belongs (a foreign writer, or a typo in another
// application) and runs every queue operation on a copy of one keyspace
// that holds a job in each state. Every operation that reaches the key
// fails with the server's WRONGTYPE error; every other one is served. A
// failed operation should change nothing, but Redis does not roll back a
// script that fails halfway, and the scripts that write before they meet
// the foreign key leave partial writes that lose or strand a job: those
// are pinned in knownPartial as known hazards, for the protocol's owners
// to fix (a type check of every KEYS entry before the first write).
func TestBadInputWrongType(t *testing.T) {
	srv := redistest.Start(t)
	c := badClient(t, srv)
	ctx := ctxT(t)
	q := queue(t, c, "poisoned")
	k := q.Keys()
	push := func() emq.ID {
		t.Helper()
		id := mint(t, c, emq.WorkKind)
		if ok, err := q.Push(ctx, id, []byte("p-"+id.String())); err != nil || !ok {
			t.Fatalf("Push = %v, %v", ok, err)
		}
		return id
	}
	claim := func(lease time.Duration) emq.Job {
		t.Helper()
		j, ok, err := q.Claim(ctx, lease)
		if err != nil || !ok {
			t.Fatalf("Claim = %v, %v", ok, err)
		}
		return j
	}
	// A dead job, an active job whose lease has run out, a pending job and
	// a scheduled job that is due.
	dead := push()
	if err := q.Bury(ctx, dead, claim(time.Minute).Token); err != nil {
		t.Fatal(err)
	}
	push()
	active := claim(time.Millisecond)
	push() // a pending job
	scheduled := mint(t, c, emq.WorkKind)
	if ok, err := q.EnqueueAt(ctx, scheduled, []byte("s"), time.Now().Add(-time.Second)); err != nil || !ok {
		t.Fatalf("EnqueueAt = %v, %v", ok, err)
	}
	time.Sleep(5 * time.Millisecond)
	state := keyspace(t, srv)
	activeRow, _ := k.Row(active.ID)
	fresh := mint(t, c, emq.WorkKind)
	freshRow, _ := k.Row(fresh)
	// The key types of a row and of the doorbell, as the scripts name them.
	var rowType, wakeType string
	for _, s := range wire.Scripts() {
		for _, kt := range s.KeyTypes {
			switch key, ok := k.Key(kt); {
			case !ok && !strings.Contains(kt, ":"):
				rowType = kt
			case ok && key == k.Wake:
				wakeType = kt
			}
		}
	}
	if rowType == "" || wakeType == "" {
		t.Fatalf("no script takes a row (%q) or the doorbell (%q)", rowType, wakeType)
	}

	ops := []op{
		{"Enqueue", []*wire.Script{wire.ScriptEnqueue}, nil, func(ctx context.Context) error { _, err := q.Enqueue(ctx, fresh, []byte("n")); return err }},
		{"EnqueueAt", []*wire.Script{wire.ScriptEnqueueAt}, nil, func(ctx context.Context) error {
			_, err := q.EnqueueAt(ctx, fresh, []byte("n"), time.Now())
			return err
		}},
		{"Push", []*wire.Script{wire.ScriptPush}, nil, func(ctx context.Context) error { _, err := q.Push(ctx, fresh, []byte("n")); return err }},
		{"PushBatch", []*wire.Script{wire.ScriptPush}, nil, func(ctx context.Context) error {
			_, err := q.PushBatch(ctx, []emq.NewJob{{ID: fresh, Payload: []byte("n")}})
			return err
		}},
		{"Claim", []*wire.Script{wire.ScriptClaim}, nil, func(ctx context.Context) error { _, _, err := q.Claim(ctx, time.Minute); return err }},
		{"Extend", []*wire.Script{wire.ScriptExtend}, nil, func(ctx context.Context) error {
			_, err := q.Extend(ctx, active.ID, active.Token, time.Minute)
			return err
		}},
		{"Complete", []*wire.Script{wire.ScriptComplete}, nil, func(ctx context.Context) error { return q.Complete(ctx, active.ID, active.Token) }},
		{"Retry", []*wire.Script{wire.ScriptRetryPolicy}, nil, func(ctx context.Context) error {
			_, err := q.Retry(ctx, active.ID, active.Token, time.Second)
			return err
		}},
		{"Bury", []*wire.Script{wire.ScriptBuryPolicy}, nil, func(ctx context.Context) error { return q.Bury(ctx, active.ID, active.Token) }},
		{"Promote", []*wire.Script{wire.ScriptPromote}, nil, func(ctx context.Context) error { _, err := q.Promote(ctx, 10); return err }},
		{"Reap", []*wire.Script{wire.ScriptReap}, nil, func(ctx context.Context) error { _, err := q.Reap(ctx, 10, 0); return err }},
		{"Reap(bury)", []*wire.Script{wire.ScriptReap}, nil, func(ctx context.Context) error { _, err := q.Reap(ctx, 10, 1); return err }},
		{"Revive", []*wire.Script{wire.ScriptReviveRecorded}, nil, // 2.4.0: revive_recorded, which rings the doorbell itself
			func(ctx context.Context) error { _, err := q.Revive(ctx, dead); return err }},
		{"Purge", []*wire.Script{wire.ScriptPurge}, nil, func(ctx context.Context) error { _, err := q.Purge(ctx, dead); return err }},
		// The worker's calls: it claims with claim_many and completes with
		// complete_claim, and maintenance rings the doorbell.
		{"ClaimMany", []*wire.Script{wire.ScriptClaimMany}, nil, func(ctx context.Context) error {
			call := wire.ClaimManyCall{Pending: k.Pending, Active: k.Active, Wake: k.Wake, Prefix: k.RowPrefix(), LeaseMS: 60000, Count: 10}
			_, err := call.Exec(ctx, c.Redis())
			return err
		}},
		{"CompleteClaim", []*wire.Script{wire.ScriptCompleteClaim}, nil, func(ctx context.Context) error {
			call := wire.CompleteClaimCall{Row: activeRow, Active: k.Active, Pending: k.Pending, Wake: k.Wake, ID: active.ID, Token: active.Token, Prefix: k.RowPrefix(), LeaseMS: 60000, Count: 10}
			_, err := call.Exec(ctx, c.Redis())
			return err
		}},
		{"Ring", []*wire.Script{wire.ScriptRing}, nil, func(ctx context.Context) error {
			_, err := (&wire.RingCall{Wake: k.Wake}).Exec(ctx, c.Redis())
			return err
		}},
		{"Sizes", nil, setTypes(), func(ctx context.Context) error { _, err := q.Sizes(ctx); return err }},
		{"Get", nil, []string{rowType}, func(ctx context.Context) error { _, _, err := q.Get(ctx, active.ID); return err }},
	}
	for _, s := range wire.Sets() {
		ops = append(ops,
			op{"Size(" + string(s) + ")", nil, []string{string(s)}, func(ctx context.Context) error { _, err := q.Size(ctx, s); return err }},
			op{"Browse(" + string(s) + ")", nil, []string{string(s)}, func(ctx context.Context) error { _, err := q.Browse(ctx, s, 10); return err }},
			op{"Page(" + string(s) + ")", nil, []string{string(s)}, func(ctx context.Context) error { _, _, err := q.Page(ctx, s, "", 10); return err }},
		)
	}
	// The planted keys: each of the queue's sets and its doorbell, the row
	// of the active job, and the row a new job would take.
	type plant struct {
		name, typ, key string
	}
	var plants []plant
	for _, s := range wire.Sets() {
		plants = append(plants, plant{string(s), string(s), k.Set(s)})
	}
	plants = append(plants, plant{wakeType, wakeType, k.Wake}, plant{"active row", rowType, activeRow}, plant{"fresh row", rowType, freshRow})
	// reaches reports whether o touches the planted key: a key type its
	// scripts take (each script reads all its KEYS before writing) or its
	// commands read, and for a row, the job's own.
	activeRowOps := map[string]bool{"Extend": true, "Complete": true, "Retry": true, "Bury": true, "Reap": true, "Reap(bury)": true, "CompleteClaim": true, "Get": true}
	// freshRowOps take the row a new job's id would have.
	freshRowOps := map[string]bool{"Enqueue": true, "EnqueueAt": true, "Push": true, "PushBatch": true}
	reaches := func(pl plant, o op) bool {
		switch pl.name {
		case "active row":
			return activeRowOps[o.name]
		case "fresh row":
			return freshRowOps[o.name] // the scripts read the row's type first: WRONGTYPE, nothing written
		}
		for _, s := range o.scripts {
			if slices.Contains(s.KeyTypes, pl.typ) {
				return true
			}
		}
		return slices.Contains(o.keys, pl.typ)
	}
	// knownPartial are the writes a script makes before it meets the
	// planted key. Since 2.1.1 every script reads each of its KEYS with a
	// command of the key's type before it writes, so a planted key changes
	// nothing — except a row reached through the row prefix (undeclared,
	// found by popping an id): reap pops the expired id from active before
	// it meets the planted row.
	knownPartial := map[string]map[string][]string{
		"active row": {"Reap": {"-" + k.Active}, "Reap(bury)": {"-" + k.Active}},
	}
	for _, pl := range plants {
		t.Run(strings.ReplaceAll(pl.name, " ", "_"), func(t *testing.T) {
			for _, o := range ops {
				restore(t, srv, state)
				if _, err := srv.Do("DEL", pl.key); err != nil {
					t.Fatal(err)
				}
				if _, err := srv.Do("SET", pl.key, "foreign"); err != nil {
					t.Fatal(err)
				}
				planted := keyspace(t, srv)
				err := o.run(ctx)
				d := diffKeys(planted, keyspace(t, srv))
				if !reaches(pl, o) {
					if err != nil {
						t.Errorf("%s, which does not touch the foreign %s: %v", o.name, pl.name, err)
					}
					continue
				}
				var re *rueidis.RedisError
				// A string at the active key has the tripwire's shape
				// (echomq 2.7.0): a 2.7 script refuses it as a policy it
				// cannot honour, writing nothing.
				tripwire := pl.typ == string(emq.SetActive) && errors.Is(err, emq.ErrPolicy)
				if !tripwire && (!errors.As(err, &re) || !strings.HasPrefix(re.Error(), "WRONGTYPE")) {
					t.Errorf("%s over a foreign %s = %v; want the server's WRONGTYPE", o.name, pl.name, err)
					continue
				}
				want := knownPartial[pl.name][o.name]
				slices.Sort(want)
				switch {
				case want == nil && len(d) != 0:
					t.Errorf("%s over a foreign %s failed (%v) but wrote %v", o.name, pl.name, err, d)
				case want != nil && !slices.Equal(d, want):
					t.Errorf("%s over a foreign %s (a known partial write %v) now writes %v: if nothing, the scripts were fixed; drop it from knownPartial", o.name, pl.name, want, d)
				case want != nil:
					t.Logf("KNOWN HAZARD: %s over a foreign %s fails (%v) after writing %v", o.name, pl.name, err, d)
				}
			}
		})
	}
	// The former hazard in full, for the pending set: a push that failed
	// on it left a row, and the caller's retry was answered "duplicate"
	// with the job in no set. Now the failed push writes nothing, and the
	// retry, once the foreign key is gone, enqueues the job.
	restore(t, srv, state)
	if _, err := srv.Do("DEL", k.Pending); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Do("SET", k.Pending, "foreign"); err != nil {
		t.Fatal(err)
	}
	_, err := q.Push(ctx, fresh, []byte("n"))
	if _, err := srv.Do("DEL", k.Pending); err != nil { // the foreign writer goes away
		t.Fatal(err)
	}
	ok, err2 := q.Push(ctx, fresh, []byte("n"))
	info, found, _ := q.Get(ctx, fresh)
	inPending, _ := srv.Do("ZSCORE", k.Pending, fresh.String())
	if err == nil || !ok || err2 != nil || !found || info.State != emq.StatePending || inPending != "0" {
		t.Errorf("Push over a foreign pending set = %v; the retry: enqueued %v, %v; row %v (%s), in pending %q; want the retry to enqueue the job", err, ok, err2, found, info.State, inPending)
	}
}

func setTypes() []string {
	var out []string
	for _, s := range wire.Sets() {
		out = append(out, string(s))
	}
	return out
}

// TestBadInputFencedKeyspace: a keyspace fenced by another version, or
// whose reserve holds what no client of this version wrote, refuses
// Connect with ErrVersionFence (a *FenceError naming the record found,
// when there is one to name) and nothing is written: no bundle, no node
// lease.
func TestBadInputFencedKeyspace(t *testing.T) {
	srv := redistest.Start(t)
	ctx := ctxT(t)
	other, _ := record(wire.VersionMajor+1, 0, 0)
	lower, _ := record(wire.VersionMajor-1, wire.VersionMinor+1, 0)
	prefix := strings.TrimSuffix(wire.VersionRecord, emq.Version)
	padded := prefix + fmt.Sprintf("%d.0%d.%d", wire.VersionMajor, wire.VersionMinor, wire.VersionPatch)
	paddedLower := prefix + fmt.Sprintf("%d.%d.00", wire.VersionMajor, max(wire.VersionMinor-1, 0))
	huge := prefix + fmt.Sprintf("99999999999999999999.%d.%d", wire.VersionMinor, wire.VersionPatch)
	for _, tc := range []struct {
		name  string
		plant [][]string
		fence bool   // whether the refusal is a *FenceError
		found string // its Found
	}{
		{name: "another major", plant: [][]string{{"SET", wire.KeyVersion, other}}, fence: true, found: other},
		{name: "a lower major", plant: [][]string{{"SET", wire.KeyVersion, lower}}, fence: true, found: lower},
		{name: "not a record", plant: [][]string{{"SET", wire.KeyVersion, "garbage"}}, fence: true, found: "garbage"},
		{name: "empty record", plant: [][]string{{"SET", wire.KeyVersion, ""}}, fence: true, found: ""},
		{name: "another protocol", plant: [][]string{{"SET", wire.KeyVersion, "x" + wire.VersionRecord}}, fence: true, found: "x" + wire.VersionRecord},
		{name: "trailing newline", plant: [][]string{{"SET", wire.KeyVersion, wire.VersionRecord + "\n"}}, fence: true, found: wire.VersionRecord + "\n"},
		{name: "the version key is a hash", plant: [][]string{{"HSET", wire.KeyVersion, "a", "b"}}},
		{name: "the bundle key is a string", plant: [][]string{{"SET", wire.KeyVersion, wire.VersionRecord}, {"SET", wire.KeyBundle, "foreign"}}},
		// The fence script judges digits as CheckVersionRecord does (since
		// 2.2.1; 2.2.0's took a zero-padded number for this version with
		// tonumber and recorded this client's bundle before the client
		// refused the record): a zero-padded part or a major too long for
		// an int is refused before anything is written.
		{name: "zero-padded minor", plant: [][]string{{"SET", wire.KeyVersion, padded}}, fence: true, found: padded},
		{name: "zero-padded lower minor", plant: [][]string{{"SET", wire.KeyVersion, paddedLower}}, fence: true, found: paddedLower},
		{name: "overflowing major", plant: [][]string{{"SET", wire.KeyVersion, huge}}, fence: true, found: huge},
		{name: "a fresh keyspace with a foreign bundle key", plant: [][]string{{"SET", wire.KeyBundle, "foreign"}}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if _, err := srv.Do("FLUSHALL"); err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.plant {
				if _, err := srv.Do(p...); err != nil {
					t.Fatal(err)
				}
			}
			before := keyspace(t, srv)
			c, err := emq.Connect(ctx, options(srv))
			if c != nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			if !errors.Is(err, emq.ErrVersionFence) {
				t.Fatalf("Connect = %v; want ErrVersionFence", err)
			}
			var fe *emq.FenceError
			if isFence := errors.As(err, &fe); isFence != tc.fence || isFence && (fe.Found != tc.found || fe.Want != wire.VersionRecord) {
				t.Errorf("Connect = %#v; want a *FenceError %v, finding %q", err, tc.fence, tc.found)
			}
			d := diffKeys(before, keyspace(t, srv))
			if len(d) != 0 {
				t.Errorf("the refused Connect wrote %v", d)
			}
			t.Logf("Connect: %v", err)
		})
	}
}
