package bundle_test

import (
	"context"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// declaredPrelude runs before a script's own text, in the same chunk: it
// shadows redis with a table whose call and pcall raise UNDECLARED
// <command> <key> for any key argument not among KEYS (key positions per
// command: DEL and EXISTS take keys only, TIME none, every other command
// of the bundle one key first) and otherwise call through.
const declaredPrelude = `local real = redis
local declared = {}
for _, k in ipairs(KEYS) do declared[k] = true end
local allkeys = {DEL = true, EXISTS = true}
local nokeys = {TIME = true}
local function check(cmd, ...)
  local args = {...}
  local c = string.upper(cmd)
  local last = 1
  if allkeys[c] then last = #args elseif nokeys[c] then last = 0 end
  for i = 1, last do
    if not declared[args[i]] then
      error('UNDECLARED ' .. c .. ' ' .. tostring(args[i]))
    end
  end
end
local redis = setmetatable({
  call = function(cmd, ...) check(cmd, ...) return real.call(cmd, ...) end,
  pcall = function(cmd, ...) check(cmd, ...) return real.pcall(cmd, ...) end,
}, {__index = real})
`

// TestDeclaredKeys runs every script of the current bundle, on a seeded
// queue where each has work to do, under declaredPrelude, and pins which
// scripts touch a key they do not declare: exactly the pop paths that
// reach rows through the row prefix (issue 12). A script that starts or
// stops doing so fails the test.
// didWork is what each script that takes ids answers on the seeded queue
// (ids 1-2 pending, 3 scheduled and due, 4 active and expired, 5 active,
// 6 dead, 7 absent): records for push_many (one per id), jobs leased for
// claim_ids and complete_claim_ids (1 and 2), jobs moved for promote_ids
// (3) and reap_ids (4).
var didWork = map[string]int64{"push_many": 7, "claim_ids": 2, "complete_claim_ids": 2, "promote_ids": 1, "reap_ids": 1,
	"add_many": 7, "complete_result_claim_ids": 2, "reap_recorded_ids": 1, "reap_failed_ids": 1}

func TestDeclaredKeys(t *testing.T) {
	data, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.Parse("protocol.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	do := func(args ...string) {
		t.Helper()
		if err := rc.Do(ctx, rc.B().Arbitrary(args...).Build()).Error(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	const queue = "q"
	key := func(k model.ScriptKey, id string) string {
		return strings.NewReplacer("<queue>", queue, "<id>", id).Replace(p.KeyShape(k))
	}
	rowKey := key(model.ScriptKey{Type: p.Row.Key}, "")
	work := p.WorkKind().Name
	id := func(n string) string { return work + strings.Repeat("0", p.IDs.Length-len(work)-len(n)) + n }
	set := func(state string) string { s, _ := p.State(state); return key(model.ScriptKey{Type: s.Set}, "") }
	field := func(role string) string { f, _ := p.Field(role); return f.Name }
	seed := func() {
		do("FLUSHALL")
		for _, j := range []struct{ id, state, score, token string }{
			{id("1"), "pending", "0", "0"}, {id("2"), "pending", "0", "0"},
			{id("3"), "scheduled", "1", "0"}, {id("4"), "active", "1", "1"},
			{id("5"), "active", "99999999999999", "1"}, {id("6"), "dead", "0", "1"},
		} {
			do("HSET", rowKey+j.id, field(model.RoleState), j.state, field(model.RoleToken), j.token, field(model.RolePayload), "p")
			do("ZADD", set(j.state), j.score, j.id)
		}
	}
	ints := map[string]string{"lease_ms": "30000", "count": "5", "limit": "10", "max_attempts": "0", "delay_ms": "0", "run_at_ms": "0", "ttl_ms": "1000",
		"attempts": "0", "backoff_ms": "0", "backoff_max_ms": "0", "keep": "10", "keep_age_ms": "0", "events_max": "100", "jitter": "0", "bury": "0", "minutes": "5", "hold": "0",
		// 2.6.0: a cron schedule ("x": the scripts never parse it) upserted
		// with its default grace; a pause; a page from the first; the due
		// ones now; and firing entries that each expect the seeded
		// scheduler's next slot (1) and leave it there, so that every entry
		// whose run row is absent fires.
		"every_ms": "0", "start_ms": "0", "backfill": "0", "grace_ms": "60000", "paused": "1", "offset": "0", "horizon_ms": "0", "spread": "0",
		"expects": "1", "nexts": "1", "slots": "1", "untils": "1",
		// 2.7.0: a pause and a cap (set_policy lays the tripwire, after every
		// older script in manifest order).
		"concurrency": "3", "rate_limit": "5", "rate_period_ms": "1000"}
	// strs are the string arguments that need a value other than "x" (or
	// than their vocabulary's first word): an events page from the start,
	// a worker's backoff (inherit is a job's word only), the scheduler
	// the repeated groups name ("p", as every member of a group that is
	// not an id).
	strs := map[string]string{"after": "", "backoff": "fixed", "cursor": "0", "scheduler": "p"}
	// seedScheduler upserts scheduler "p", an interval anchored at 1 (its
	// next slot), for the scheduler scripts that read or fire one.
	seedScheduler := func() {
		t.Helper()
		for j, u := range p.Scripts {
			if u.Name != "upsert_scheduler" {
				continue
			}
			var keys []string
			for _, k := range u.Keys {
				keys = append(keys, key(k, ""))
			}
			if err := rueidis.NewLuaScript(b.Scripts[j].Source).Exec(ctx, rc, keys, []string{"p", "", "1000", "1", "", "run_once", "0", "60000", "{slot}"}).Error(); err != nil {
				t.Fatalf("upsert_scheduler: %v", err)
			}
			return
		}
		t.Fatal("the manifest has no upsert_scheduler")
	}
	var undeclared []string
	for i, s := range p.Scripts {
		seed()
		for _, k := range s.Keys {
			if k.Type == "schedulers" && s.Name != "upsert_scheduler" {
				seedScheduler()
			}
		}
		target := id("5") // active, token 1
		if s.Name == "revive" || s.Name == "purge" {
			target = id("6")
		}
		var keys, argv []string
		// A repeated group gets every seeded id and a fresh one (7): the
		// script must pick its own among them.
		group := []string{id("1"), id("2"), id("3"), id("4"), id("5"), id("6"), id("7")}
		for _, k := range s.Keys {
			if k.Repeated {
				for _, g := range group {
					keys = append(keys, key(k, g))
				}
				continue
			}
			keys = append(keys, key(k, target))
		}
		members, _ := s.RepeatedArgs()
		for _, a := range s.Argv {
			if a.Repeated {
				if a.Name != members[0].Name {
					continue // written with the first member, entry by entry
				}
				for _, g := range group {
					for _, m := range members {
						if m.Type == "id" {
							argv = append(argv, g)
						} else if m.Type == "int" {
							argv = append(argv, ints[m.Name])
						} else {
							argv = append(argv, "p")
						}
					}
				}
				continue
			}
			switch a.Type {
			case "id":
				argv = append(argv, target)
			case "token":
				argv = append(argv, "1")
			case "prefix":
				argv = append(argv, rowKey)
			case "int":
				argv = append(argv, ints[a.Name])
			default:
				if v, ok := strs[a.Name]; ok {
					argv = append(argv, v)
					break
				}
				if v, ok := p.Vocabulary(a.Vocabulary); ok && a.Vocabulary != "" {
					argv = append(argv, v.Words[0].Word) // a word the script admits
					break
				}
				argv = append(argv, "x")
			}
		}
		src := declaredPrelude + b.Scripts[i].Source
		res := rueidis.NewLuaScript(src).Exec(ctx, rc, keys, argv)
		err := res.Error()
		if want, ok := didWork[s.Name]; ok && err == nil {
			// The declared-key scripts did their work on the seeded queue.
			n, _ := res.AsInt64()
			if arr, aerr := res.ToArray(); aerr == nil {
				n = int64(len(arr))
			}
			if n != want {
				t.Errorf("%s: reply %d (jobs or moves), want %d", s.Name, n, want)
			}
		}
		if s.Name == "fire_schedulers" && err == nil {
			// The one entry whose run row was absent (7) fired its run.
			if n, _ := rc.Do(ctx, rc.B().Exists().Key(rowKey+id("7")).Build()).AsInt64(); n != 1 {
				t.Errorf("fire_schedulers fired no run: %v", res)
			}
		}
		switch {
		case err != nil && strings.Contains(err.Error(), "UNDECLARED"):
			t.Logf("%s: %v", s.Name, err)
			undeclared = append(undeclared, s.Name)
		case err != nil && !rueidis.IsRedisNil(err):
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	sort.Strings(undeclared)
	// The pop paths of 2.0 and 2.1 (issue 12): rows of popped ids, built
	// from the prefix argument.
	want := []string{"claim", "claim_many", "complete_claim", "promote", "reap"}
	if !slices.Equal(undeclared, want) {
		t.Errorf("scripts touching undeclared keys: %v, want %v", undeclared, want)
	}
}
