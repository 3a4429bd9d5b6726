package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestCheckerDetects plants every kind of breach in a real keyspace and
// checks that one pass reports each, and nothing about the sound jobs.
func TestCheckerDetects(t *testing.T) {
	srv := redistest.Start(t)
	keys, err := wire.NewQueueKeys("chk")
	if err != nil {
		t.Fatal(err)
	}
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
	row := func(id string, state emq.State, attempts string, extra ...string) {
		t.Helper()
		do(append([]string{"HSET", keys.RowPrefix() + id, wire.FieldState, string(state), wire.FieldToken, attempts, wire.FieldPayload, "p"}, extra...)...)
	}
	member := func(s emq.Set, id string) { t.Helper(); do("ZADD", keys.Set(s), "0", id) }

	// Sound: one job per state, in its set.
	for i, st := range wire.States() {
		id := "SOUND" + string(rune('a'+i))
		row(id, st, "1")
		member(st.Set(), id)
	}
	row("EXTRA", emq.StatePending, "0", "extra", "x")
	member(emq.SetPending, "EXTRA")
	row("WRONGSET", emq.StatePending, "1")
	member(emq.SetActive, "WRONGSET")
	row("TWOSETS", emq.StatePending, "0")
	member(emq.SetPending, "TWOSETS")
	member(emq.SetDead, "TWOSETS")
	member(emq.SetSchedule, "ORPHAN")
	row("BADSTATE", emq.State("nowhere"), "0")
	do("HSET", keys.RowPrefix()+"NOSET", wire.FieldState, string(emq.StatePending), wire.FieldToken, "0")
	row("DOWN", emq.StateActive, "3")
	member(emq.SetActive, "DOWN")
	row("BACK", emq.StateActive, "2")
	member(emq.SetActive, "BACK")

	c, err := NewChecker([]string{srv.Addr()}, keys)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	// Attempts go back; a retired row comes back.
	row("DOWN", emq.StateActive, "1")
	do("DEL", keys.RowPrefix()+"BACK")
	do("ZREM", keys.Set(emq.SetActive), "BACK")
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	row("BACK", emq.StatePending, "2")
	member(emq.SetPending, "BACK")
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}

	got := strings.Join(c.Violations(), "\n")
	for _, want := range []string{
		"job EXTRA: the row has 4 fields, not 3",
		"job WRONGSET: the row's state is " + string(emq.StatePending) + ", but set " + string(emq.SetPending) + " does not hold the id",
		"job WRONGSET: the row's state is " + string(emq.StatePending) + ", but set " + string(emq.SetActive) + " holds the id too",
		"job TWOSETS: the row's state is " + string(emq.StatePending) + ", but set " + string(emq.SetDead) + " holds the id too",
		"job ORPHAN: set " + string(emq.SetSchedule) + " holds the id, which has no row",
		"job BADSTATE: the row's " + wire.FieldState,
		"job NOSET: the row has 2 fields, not 3",
		"job NOSET: the row lacks field " + wire.FieldPayload,
		"job DOWN: " + wire.FieldToken + " decreased from 3 to 1",
		"job BACK: the row was retired, then seen again",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no violation %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "SOUND") {
		t.Errorf("violations about sound jobs:\n%s", got)
	}
	final, err := c.Final(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if final["SOUNDd"] != emq.SetDead || final["ORPHAN"] != emq.SetSchedule {
		t.Errorf("Final: %v", final)
	}
	if passes, checked, _, _ := c.Stats(); passes != 3 || checked == 0 {
		t.Errorf("stats: %d passes, %d checks", passes, checked)
	}
}

// TestCheckerPolicyLayout: under the tripwire (set_policy's pause) the
// checker reads the leased jobs in the running set — a sound active job
// raises nothing, its membership is read there, Final names its set — and
// it reports a layout that is neither: a running set in the classic
// layout, a tripwire without a policy record.
func TestCheckerPolicyLayout(t *testing.T) {
	srv := redistest.Start(t)
	keys, err := wire.NewQueueKeys("chkpol")
	if err != nil {
		t.Fatal(err)
	}
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
	do("HSET", keys.RowPrefix()+"HELD", wire.FieldState, string(emq.StateActive), wire.FieldToken, "1", wire.FieldPayload, "p")
	do("ZADD", keys.Set(emq.SetActive), "0", "HELD")
	pause := wire.SetPolicyCall{Pending: keys.Pending, Active: keys.Active, Running: keys.Running, Policy: keys.Policy, Wake: keys.Wake, Paused: 1, Concurrency: -1}
	if _, err := pause.Exec(ctx, rc); err != nil {
		t.Fatal(err)
	}
	c, err := NewChecker([]string{srv.Addr()}, keys)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Pass(ctx); err != nil {
		t.Fatalf("a pass under the tripwire: %v", err)
	}
	if v := c.Violations(); len(v) != 0 {
		t.Errorf("violations under a sound tripwire: %q", v)
	}
	if classic, policy := c.Layouts(); classic != 0 || policy == 0 {
		t.Errorf("layouts read: %d classic, %d policy; want the policy layout only", classic, policy)
	}
	if final, err := c.Final(ctx); err != nil || final["HELD"] != emq.SetActive {
		t.Errorf("Final under the tripwire: %v, %v; want HELD in %s", final, err, emq.SetActive)
	}
	// A tripwire without a policy record, then a running set beside a
	// classic active set.
	do("DEL", keys.Policy)
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	do("DEL", keys.Active)
	do("ZADD", keys.Active, "0", "HELD")
	if err := c.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Violations(), "\n")
	for _, want := range []string{"holds the tripwire, yet the queue has no policy record", "the running key is a zset in the classic layout"} {
		if !strings.Contains(got, want) {
			t.Errorf("no violation %q in:\n%s", want, got)
		}
	}
}
