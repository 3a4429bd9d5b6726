package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestDedupRaceAcrossLanguages: pushes with one deduplication key sent at
// once from the Go, TypeScript and Python testees (each its own job id)
// admit exactly one job, and every other push answers a duplicate of that
// job: the decision is the add_dedup script's, one atomic call, with no
// check-then-act between processes. 40 rounds, each key fresh, each
// round's three pushes released together.
func TestDedupRaceAcrossLanguages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the three testees")
	}
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	langs, procs := raceTestees(t, ctx, srv)
	queue := "race"
	const rounds = 40
	for r := 0; r < rounds; r++ {
		ids := make([]string, len(procs))
		for i, p := range procs {
			rep, err := p.call(ctx, "mint", map[string]any{"kind": string(wire.WorkKind)}, time.Minute)
			if err != nil || !rep.OK {
				t.Fatalf("%s: mint: %v %+v", langs[i].Name, err, rep)
			}
			ids[i] = fmt.Sprint(rep.Result["id"])
		}
		key := fmt.Sprintf("order-%d", r)
		reps := make([]*Reply, len(procs))
		errs := make([]error, len(procs))
		var wg, ready sync.WaitGroup
		gate := make(chan struct{})
		for i, p := range procs {
			wg.Add(1)
			ready.Add(1)
			go func() {
				defer wg.Done()
				ready.Done()
				<-gate
				reps[i], errs[i] = p.call(ctx, "push_dedup", map[string]any{"queue": queue, "id": ids[i], "payload": langs[i].Name, "key": key, "mode": string(wire.DedupUntilDone)}, time.Minute)
			}()
		}
		ready.Wait()
		close(gate)
		wg.Wait()
		admitted := ""
		for i, rep := range reps {
			if errs[i] != nil || !rep.OK {
				t.Fatalf("round %d, %s: push_dedup: %v %+v", r, langs[i].Name, errs[i], rep)
			}
			if rep.Result["outcome"] == string(wire.AdmissionAdmitted) {
				if admitted != "" {
					t.Fatalf("round %d: two jobs admitted with key %s: %s and %v", r, key, admitted, rep.Result["id"])
				}
				admitted = fmt.Sprint(rep.Result["id"])
			}
		}
		if admitted == "" {
			t.Fatalf("round %d: no job admitted with key %s: %+v %+v %+v", r, key, reps[0].Result, reps[1].Result, reps[2].Result)
		}
		for i, rep := range reps {
			if rep.Result["outcome"] != string(wire.AdmissionAdmitted) && (rep.Result["outcome"] != string(wire.AdmissionDuplicate) || rep.Result["id"] != admitted) {
				t.Fatalf("round %d, %s: %+v; want a duplicate of %s", r, langs[i].Name, rep.Result, admitted)
			}
		}
	}
	keys, err := wire.NewQueueKeys(queue)
	if err != nil {
		t.Fatal(err)
	}
	n, err := srv.Do("ZCARD", keys.Pending)
	if err != nil || n != fmt.Sprint(rounds) {
		t.Fatalf("pending holds %s jobs (%v); want one per round, %d", n, err, rounds)
	}
}

// raceTestees builds and starts every language's testee, connected to
// srv; they stop when the test ends.
func raceTestees(t *testing.T, ctx context.Context, srv *redistest.Server) ([]Language, []*process) {
	t.Helper()
	root := "../.."
	langs, err := LoadLanguages(root)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	var procs []*process
	for _, l := range langs {
		fill := func(argv []string) []string {
			out := make([]string, len(argv))
			for i, a := range argv {
				out[i] = strings.ReplaceAll(a, "{bin}", bin)
			}
			return out
		}
		if len(l.Build) > 0 {
			argv := fill(l.Build)
			cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: building the testee: %v\n%s", l.Name, err, out)
			}
		}
		p, err := start(root, fill(l.Run), os.Stderr)
		if err != nil {
			t.Fatalf("%s: %v", l.Name, err)
		}
		t.Cleanup(func() { p.stop() })
		if rep, err := p.call(ctx, "connect", map[string]any{"addr": srv.Addr()}, time.Minute); err != nil || !rep.OK {
			t.Fatalf("%s: connect: %v %+v", l.Name, err, rep)
		}
		procs = append(procs, p)
	}
	return langs, procs
}

// TestSchedulerRaceAcrossLanguages: the Go, TypeScript and Python testees
// tick their scheduler loops (fire_due) at once over the same due
// schedulers, each planning from the records it read and firing with the
// next slot it planned from; every slot is fired by exactly one of them,
// none is missed, and each run is one job. 10 rounds, each on a fresh
// queue of 20 interval schedulers with 6 slots due (none missed: the grace
// covers them all, the policy backfill).
func TestSchedulerRaceAcrossLanguages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the three testees")
	}
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	langs, procs := raceTestees(t, ctx, srv)
	const rounds, schedulers, slots, every = 10, 20, 6, 60000
	call := func(i int, op string, args map[string]any) map[string]any {
		t.Helper()
		rep, err := procs[i].call(ctx, op, args, time.Minute)
		if err != nil || !rep.OK {
			t.Fatalf("%s: %s %v: %v %+v", langs[i].Name, op, args, err, rep)
		}
		return rep.Result
	}
	for r := 0; r < rounds; r++ {
		queue := fmt.Sprintf("race-sched-%d", r)
		read := call(r%len(procs), "scheduler_entries", map[string]any{"queue": queue, "schedulers": []string{"none"}})
		entries, _ := read["entries"].([]any)
		if len(entries) != 1 {
			t.Fatalf("scheduler_entries: %+v", read)
		}
		num, _ := entries[0].(map[string]any)["now_ms"].(json.Number)
		now, err := num.Int64()
		if err != nil || now <= 0 {
			t.Fatalf("scheduler_entries carries no now_ms: %+v", read)
		}
		start := now - (slots-1)*every - 500
		for s := 0; s < schedulers; s++ {
			call((r+s)%len(procs), "upsert_scheduler", map[string]any{
				"queue": queue, "scheduler": fmt.Sprintf("s%02d", s), "every_ms": every, "start_ms": start,
				"missed": string(wire.MissedBackfill), "backfill": 100, "grace_ms": 10 * every,
			})
		}
		reps := make([]map[string]any, len(procs))
		var wg, ready sync.WaitGroup
		gate := make(chan struct{})
		for i := range procs {
			wg.Add(1)
			ready.Add(1)
			go func() {
				defer wg.Done()
				ready.Done()
				<-gate
				rep, err := procs[i].call(ctx, "fire_due", map[string]any{"queue": queue}, time.Minute)
				if err != nil || !rep.OK {
					t.Errorf("round %d, %s: fire_due: %v %+v", r, langs[i].Name, err, rep)
					return
				}
				reps[i] = rep.Result
			}()
		}
		ready.Wait()
		close(gate)
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		seen := map[string]string{}
		for i, rep := range reps {
			fired, _ := rep["fired"].([]any)
			for _, f := range fired {
				m, _ := f.(map[string]any)
				k := fmt.Sprintf("%v@%v", m["scheduler"], m["slot_ms"])
				if by, dup := seen[k]; dup {
					t.Fatalf("round %d: slot %s fired twice, by %s and %s", r, k, by, langs[i].Name)
				}
				seen[k] = langs[i].Name
			}
		}
		for s := 0; s < schedulers; s++ {
			for k := 0; k < slots; k++ {
				key := fmt.Sprintf("s%02d@%d", s, start+int64(k)*every)
				if _, ok := seen[key]; !ok {
					t.Fatalf("round %d: slot %s was fired by nobody (fired: %v)", r, key, seen)
				}
			}
		}
		if len(seen) != schedulers*slots {
			t.Fatalf("round %d: %d slots fired, want %d: %v", r, len(seen), schedulers*slots, seen)
		}
		keys, err := wire.NewQueueKeys(queue)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := srv.Do("ZCARD", keys.Pending); err != nil || n != fmt.Sprint(schedulers*slots) {
			t.Fatalf("round %d: pending holds %s jobs (%v); want one per slot, %d", r, n, err, schedulers*slots)
		}
	}
}
