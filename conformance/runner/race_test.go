package runner

import (
	"context"
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
	root := "../.."
	langs, err := LoadLanguages(root)
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
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
		defer p.stop()
		if rep, err := p.call(ctx, "connect", map[string]any{"addr": srv.Addr()}, time.Minute); err != nil || !rep.OK {
			t.Fatalf("%s: connect: %v %+v", l.Name, err, rep)
		}
		procs = append(procs, p)
	}
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
