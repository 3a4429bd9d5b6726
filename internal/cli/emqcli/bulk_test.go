package emqcli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// buryN pushes, claims and buries n jobs of queue name.
func buryN(t *testing.T, ctx context.Context, c *emq.Client, name string, n int) []emq.ID {
	t.Helper()
	q, err := c.Queue(name)
	if err != nil {
		t.Fatal(err)
	}
	var ids []emq.ID
	for range n {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("x")); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for range n {
		j, ok, err := q.Claim(ctx, time.Minute)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := q.Bury(ctx, j.ID, j.Token); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// TestInspectQueues: every queue with a set is listed with the size of
// each set, in text and JSON; a keyspace without queues says so.
func TestInspectQueues(t *testing.T) {
	s := seed(t)
	ctx := ctxP(t)
	code, out, errs := run(t, "inspect", "queues", "-addr", s.srv.Addr(), "-timeout", "10s")
	if code != emqcli.ExitOK || !strings.Contains(out, "(no queue found)") && strings.Count(out, "\n") < 2 {
		t.Fatalf("inspect queues = %d\n%s%s", code, out, errs)
	}
	buryN(t, ctx, s.c, "mail", 2)
	code, out, errs = run(t, "inspect", "queues", "-addr", s.srv.Addr(), "-timeout", "10s")
	t.Logf("emq inspect queues\n%s%s", out, errs)
	if code != emqcli.ExitOK {
		t.Fatalf("inspect queues = %d\n%s%s", code, out, errs)
	}
	sz, _ := s.q.Sizes(ctx)
	want := fmt.Sprintf("orders  %d", sz[emq.SetPending])
	if line := lineWith(out, "orders "); !strings.HasPrefix(strings.Join(strings.Fields(line), "  "), want) {
		t.Errorf("the orders line %q; want it to start %q", line, want)
	}
	if f := strings.Fields(lineWith(out, "mail ")); len(f) != 6 || f[0] != "mail" || f[4] != "2" || f[5] != "2" {
		t.Errorf("the mail line is %q; want 0 0 0 2 2", f)
	}
	if !strings.HasPrefix(out, "QUEUE") || strings.Index(out, "mail") > strings.Index(out, "orders") {
		t.Errorf("no header, or the queues are not sorted:\n%s", out)
	}
	code, out, errs = run(t, "inspect", "queues", "-addr", s.srv.Addr(), "-format", "json")
	var doc struct {
		Queues   []map[string]any `json:"queues"`
		Complete bool             `json:"complete"`
	}
	if code != emqcli.ExitOK || json.Unmarshal([]byte(out), &doc) != nil || !doc.Complete || len(doc.Queues) != 2 {
		t.Fatalf("inspect queues -format json = %d\n%s%s", code, out, errs)
	}
	if q := doc.Queues[0]; q["queue"] != "mail" || q[string(emq.SetDead)] != 2.0 || q["total"] != 2.0 {
		t.Errorf("json mail = %v", q)
	}
	empty := redistest.Start(t)
	if code, out, errs := run(t, "inspect", "queues", "-addr", empty.Addr()); code != emqcli.ExitOK || !strings.Contains(out, "(no queue found)") {
		t.Errorf("inspect queues of an empty keyspace = %d\n%s%s", code, out, errs)
	}
}

// TestInspectURL: -url reaches a server as -addr does, with its database
// and credentials; -db does too; -url with -addr, or credentials given
// twice, is refused before anything is sent.
func TestInspectURL(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := srv.Do("CONFIG", "SET", "requirepass", "s3cret"); err != nil {
		t.Fatal(err)
	}
	ctx := ctxP(t)
	c, err := emq.Connect(ctx, emq.Options{URL: "redis://:s3cret@" + srv.Addr() + "/3", Redis: rueidis.ClientOption{DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buryN(t, ctx, c, "db3", 1)

	for _, args := range [][]string{
		{"-url", "redis://:s3cret@" + srv.Addr() + "/3"},
		{"-url", "redis://default:s3cret@" + srv.Addr() + "/3"},
		{"-url", "redis://" + srv.Addr(), "-db", "3", "-password", "s3cret"},
		{"-addr", srv.Addr(), "-db", "3", "-password", "s3cret"},
	} {
		code, out, errs := run(t, append([]string{"inspect", "sizes", "-queue", "db3"}, args...)...)
		if code != emqcli.ExitOK || !strings.Contains(lineWith(out, string(emq.SetDead)+" "), " 1 ") {
			t.Errorf("inspect sizes %v = %d\n%s%s", args, code, out, errs)
		}
		code, out, errs = run(t, append([]string{"inspect", "queues"}, args...)...)
		if code != emqcli.ExitOK || !strings.Contains(out, "db3") {
			t.Errorf("inspect queues %v = %d\n%s%s", args, code, out, errs)
		}
	}
	// Database 0 holds nothing of it.
	if code, out, _ := run(t, "inspect", "queues", "-url", "redis://:s3cret@"+srv.Addr()); code != emqcli.ExitOK || strings.Contains(out, "db3") {
		t.Errorf("database 0 lists db3:\n%s", out)
	}
	for _, args := range [][]string{
		{"-url", "redis://" + srv.Addr(), "-addr", srv.Addr()},
		{"-url", "redis://:s3cret@" + srv.Addr(), "-password", "other"},
		{"-url", "redis://" + srv.Addr() + "/3", "-db", "4"},
		{"-url", "redis://" + srv.Addr(), "-tls"},
		{"-url", "http://" + srv.Addr()},
	} {
		code, _, errs := run(t, append([]string{"inspect", "queues"}, args...)...)
		if code != emqcli.ExitUsage || !strings.HasPrefix(errs, "emq: -") {
			t.Errorf("inspect queues %v = %d, %q; want a usage error naming the flag", args, code, errs)
		}
	}
	// The password never shows in a message.
	code, _, errs := run(t, "inspect", "queues", "-url", "redis://:wrong@"+srv.Addr(), "-timeout", "5s")
	if code != emqcli.ExitUsage || strings.Contains(errs, "wrong") || strings.Count(errs, "emq: ") != 1 {
		t.Errorf("a refused password = %d, %q; want an error with one prefix and no password", code, errs)
	}
}

// TestInspectBulk: -all revives or purges every job of the dead set; a
// dry run prints each and changes nothing; purge -all needs -yes.
func TestInspectBulk(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	ctx := ctxP(t)
	ids := buryN(t, ctx, c, "bulk", 250) // more than one revive call
	q, _ := c.Queue("bulk")
	rc := rclient(t, srv.Addr(), 0)
	base := []string{"-addr", srv.Addr(), "-queue", "bulk", "-timeout", "20s"}
	dead := func() int64 { sz, _ := q.Sizes(ctx); return sz[emq.SetDead] }

	before := snapshot(t, rc)
	for _, sub := range []string{"revive", "purge"} {
		code, out, errs := run(t, append([]string{"inspect", sub, "-all", "-dry-run"}, base...)...)
		if code != emqcli.ExitOK || strings.Count(out, "would "+sub+": dead") != 250 || !strings.Contains(out, "dry run: would "+sub+" 250 job(s); nothing was changed") {
			t.Fatalf("%s -all -dry-run = %d\n%s%s", sub, code, out, errs)
		}
	}
	if code, out, errs := run(t, append([]string{"inspect", "purge", "-all"}, base...)...); code != emqcli.ExitFindings || !strings.Contains(errs, "-yes") || !strings.Contains(out, ids[0].String()) {
		t.Fatalf("purge -all without -yes = %d\n%s%s", code, out, errs)
	}
	if after := snapshot(t, rc); !equal(before, after) {
		t.Fatal("a dry run changed the keyspace")
	}
	for _, args := range [][]string{{"-all", ids[0].String()}, {}, {"-all", "-yes", "-dry-run"}} {
		if code, _, errs := run(t, append(append([]string{"inspect", "purge"}, args...), base...)...); code != emqcli.ExitUsage {
			t.Errorf("purge %v = %d, %q; want a usage error", args, code, errs)
		}
	}

	// revive -all moves every dead job back to pending, in chunks.
	code, out, errs := run(t, append([]string{"inspect", "revive", "-all"}, base...)...)
	if code != emqcli.ExitOK || strings.Count(out, "  revived") != 250 || !strings.Contains(out, "doorbell  ") {
		t.Fatalf("revive -all = %d\n%s%s", code, out, errs)
	}
	if n := dead(); n != 0 {
		t.Fatalf("dead holds %d after revive -all", n)
	}
	if sz, _ := q.Sizes(ctx); sz[emq.SetPending] != 250 {
		t.Fatalf("pending holds %d after revive -all, want 250", sz[emq.SetPending])
	}
	if code, out, _ := run(t, append([]string{"inspect", "revive", "-all"}, base...)...); code != emqcli.ExitOK || !strings.Contains(out, "is empty: nothing to revive") {
		t.Errorf("revive -all of an empty dead set = %d\n%s", code, out)
	}

	// Bury them all again, then purge -all -yes deletes every one.
	for range 250 {
		j, ok, err := q.Claim(ctx, time.Minute)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := q.Bury(ctx, j.ID, j.Token); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs = run(t, append([]string{"inspect", "purge", "-all", "-yes"}, base...)...)
	if code != emqcli.ExitOK || strings.Count(out, "  purged") != 250 {
		t.Fatalf("purge -all -yes = %d\n%s%s", code, out, errs)
	}
	if n := dead(); n != 0 {
		t.Fatalf("dead holds %d after purge -all -yes", n)
	}
	for _, id := range ids {
		if _, ok, _ := q.Get(ctx, id); ok {
			t.Fatalf("the row of %s survived purge -all -yes", id)
		}
	}
	if code, out, _ := run(t, append([]string{"inspect", "purge", "-all", "-yes"}, base...)...); code != emqcli.ExitOK || !strings.Contains(out, "is empty: nothing to purge") {
		t.Errorf("purge -all of an empty dead set = %d\n%s", code, out)
	}
}
