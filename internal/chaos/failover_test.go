package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestFailoverQuick runs the quick variant of the cluster-failover
// scenario and checks what the protocol and Redis do promise there: the
// fault was injected (a primary SIGKILLed, its replica promoted), the SDK
// kept working (jobs acknowledged after the failover, every one of them
// finished), no job acknowledged with WAIT 1 was lost (one replica per
// primary: the promoted replica is the one that acknowledged), and the
// queue drained (nothing acknowledged is left queued). Plain-Push losses
// and jobs finished twice are measured and reported, not asserted: Redis
// replication is asynchronous, so the scenario promises neither.
func TestFailoverQuick(t *testing.T) {
	t.Parallel() // paced by its own schedule, on its own servers (see runQuick)
	s := Lookup("failover")
	if s == nil {
		t.Fatal(`no scenario "failover" registered`)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	res, err := s.Run(ctx, Config{Dir: t.TempDir(), Log: t.Logf})
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	c := res.Counts
	t.Logf("%s | %s | %s", res.Scenario, res.Load, res.Faults)
	t.Logf("acknowledged %d, finished %d, lost %d, twice %d, stale refused %d; took %v, seed %d",
		res.Acknowledged, res.Finished, res.Lost, res.Twice, res.StaleRefused, res.Took.Round(time.Millisecond), res.Seed)
	t.Logf("plain: acknowledged %d, lost %d, twice %d; WAIT 1: acknowledged %d, lost %d, twice %d",
		c["plain_acknowledged"], c["plain_lost"], c["plain_twice"], c["wait_acknowledged"], c["wait_lost"], c["wait_twice"])
	t.Logf("counts: %v", c)
	t.Logf("notes: %s", res.Notes)
	for _, v := range res.Violations {
		t.Logf("violation (measured, not promised away): %s", v)
	}

	if c["kills"] < 1 || c["failovers"] != c["kills"] {
		t.Errorf("kills %d, failovers %d: the fault was not injected, or no replica was promoted", c["kills"], c["failovers"])
	}
	if c["acked_after_failover"] == 0 {
		t.Error("no job was acknowledged after the failover: the SDK did not follow the promoted replica")
	}
	if c["finished_after_failover"] != c["acked_after_failover"] {
		t.Errorf("%d of the %d jobs acknowledged after the failover finished", c["finished_after_failover"], c["acked_after_failover"])
	}
	if c["plain_acknowledged"] == 0 || c["wait_acknowledged"] == 0 {
		t.Errorf("acknowledged: plain %d, WAIT %d; want both", c["plain_acknowledged"], c["wait_acknowledged"])
	}
	if c["wait_lost"] != 0 {
		t.Errorf("%d jobs acknowledged with WAIT 1 were lost; with one replica per primary the promoted replica had them", c["wait_lost"])
	}
	if c["queued"] != 0 {
		t.Errorf("%d acknowledged jobs are still queued: the queue did not drain", c["queued"])
	}
	if res.Acknowledged != res.Finished+res.Lost+c["queued"] {
		t.Errorf("acknowledged %d != finished %d + lost %d + queued %d", res.Acknowledged, res.Finished, res.Lost, c["queued"])
	}
	if res.Promised {
		t.Error("the failover scenario claims a promise Redis replication cannot keep")
	}
	if !strings.Contains(res.Notes, "asynchronous") || !strings.Contains(res.Notes, "WAIT") {
		t.Errorf("the notes do not say what replication can and cannot promise: %s", res.Notes)
	}
	for _, v := range res.Violations {
		if strings.Contains(v, "did not drain") || strings.Contains(v, "attributed") {
			t.Errorf("violation: %s", v)
		}
	}
	if t.Failed() {
		t.Logf("details:\n%s", res.Details)
	}
}

// TestFailoverJudge checks the scenario's accounting on a ledger made by
// hand, against a real server for the rows and sets it reads: finished
// once, finished twice, lost, still queued, a row in no set, a finish
// inferred from a completion in doubt, a token leased twice, plain and
// WAIT figures apart.
func TestFailoverJudge(t *testing.T) {
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, err := c.Queue("judge")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, name := range []string{"once", "twice", "lost", "queued", "orphan", "inferred", "after", "unconfirmed"} {
		id, err := c.Mint(emq.WorkKind)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id.String()
	}
	for _, name := range []string{"queued", "orphan"} {
		if _, err := q.Push(ctx, emq.MustParseID(ids[name]), nil); err != nil {
			t.Fatal(err)
		}
	}
	r := &failoverRun{p: failoverSizing(Config{}), led: newFailoverLedger(), tally: &emq.Tally{}}
	l := r.led
	l.ack(ids["once"], failoverAck{kind: failoverPlain})
	l.ack(ids["twice"], failoverAck{kind: failoverDurable})
	l.ack(ids["lost"], failoverAck{kind: failoverPlain})
	l.ack(ids["queued"], failoverAck{kind: failoverDurable})
	l.ack(ids["orphan"], failoverAck{kind: failoverPlain})
	l.ack(ids["inferred"], failoverAck{kind: failoverDurable})
	l.ack(ids["after"], failoverAck{kind: failoverPlain, after: true})
	l.start(ids["once"], 1)
	l.record(l.completes, ids["once"], 1)
	l.start(ids["twice"], 1)
	l.start(ids["twice"], 1) // the token minted again
	l.record(l.completes, ids["twice"], 1)
	l.record(l.completes, ids["twice"], 1)
	l.ranOK[ids["twice"]] = 2
	l.start(ids["inferred"], 1)
	l.record(l.doubts, ids["inferred"], 1)
	l.record(l.completes, ids["after"], 1)
	l.pushes[ids["twice"]] = 2
	l.unconfirmed[ids["unconfirmed"]] = true
	l.record(l.completes, ids["unconfirmed"], 1)
	// orphan's row exists, but the final read finds it in no set.
	final := map[string]emq.Set{ids["queued"]: emq.SetPending}

	res, err := r.judge(ctx, q, final)
	if err != nil {
		t.Fatal(err)
	}
	c2 := res.Counts
	want := map[string]int64{
		"plain_acknowledged": 4, "wait_acknowledged": 3, "plain_lost": 1, "wait_lost": 0, "wait_twice": 1,
		"queued": 2, "orphan_rows": 1, "inferred": 1, "double_leases": 1, "reran": 1, "in_doubt": 1,
		"acked_after_failover": 1, "finished_after_failover": 1,
		"wait_unconfirmed": 1, "wait_unconfirmed_finished": 1, "repushed": 1,
	}
	for k, n := range want {
		if c2[k] != n {
			t.Errorf("%s = %d, want %d", k, c2[k], n)
		}
	}
	if res.Acknowledged != 7 || res.Finished != 4 || res.Lost != 1 || res.Twice != 1 {
		t.Errorf("acknowledged %d, finished %d, lost %d, twice %d; want 7, 4, 1, 1", res.Acknowledged, res.Finished, res.Lost, res.Twice)
	}
	if res.Promised || len(res.Violations) != 2 {
		t.Errorf("promised %v, violations %q; want false and two (a token leased twice, a row in no set)", res.Promised, res.Violations)
	}
}
