package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func options(srv *redistest.Server) emq.Options {
	return emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}}
}

// connect is a producer's and worker's client; observe the dashboard's.
func connect(t testing.TB, srv *redistest.Server) *emq.Client {
	t.Helper()
	c, err := emq.Connect(ctxT(t), options(srv))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func observe(t testing.TB, srv *redistest.Server) *emq.Client {
	t.Helper()
	c, err := emq.Observe(ctxT(t), options(srv))
	if err != nil {
		t.Fatalf("Observe: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// world is a keyspace with jobs in every state.
type world struct {
	srv *redistest.Server
	c   *emq.Client
	// ids by queue and state, oldest first.
	ids map[string]map[emq.State][]emq.ID
}

// seed fills queue "orders" with pending jobs (JSON payloads), two
// active, three scheduled and dead ones, "emails" with a binary payload
// and "reports.v2" with one dead job only.
func seed(t testing.TB, pending, dead int) *world {
	t.Helper()
	srv := redistest.Start(t)
	c := connect(t, srv)
	ctx := ctxT(t)
	w := &world{srv: srv, c: c, ids: map[string]map[emq.State][]emq.ID{}}
	add := func(q string, s emq.State, id emq.ID) {
		if w.ids[q] == nil {
			w.ids[q] = map[emq.State][]emq.ID{}
		}
		w.ids[q][s] = append(w.ids[q][s], id)
	}
	mint := func() emq.ID {
		id, err := c.Mint(emq.WorkKind)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	orders, _ := c.Queue("orders")
	// Dead jobs first: pushed, claimed, buried.
	for i := 0; i < dead; i++ {
		if _, err := orders.Push(ctx, mint(), []byte(fmt.Sprintf(`{"order":%d,"card":"4111-1111"}`, i))); err != nil {
			t.Fatal(err)
		}
		j, ok, err := orders.Claim(ctx, time.Minute)
		if err != nil || !ok {
			t.Fatalf("Claim: %v %v", ok, err)
		}
		// Buried with a failure record (2.3.0), as a worker buries it.
		f := emq.Failure{Class: emq.FailureClassError, Worker: "billing-7:4242", Message: fmt.Sprintf("card declined for order %d\nat charge (billing.go:42)", i)}
		if err := orders.BuryFailed(ctx, j.ID, j.Token, f); err != nil {
			t.Fatal(err)
		}
		add("orders", emq.StateDead, j.ID)
	}
	for i := 0; i < 2; i++ {
		if _, err := orders.Push(ctx, mint(), []byte(`{"active":true}`)); err != nil {
			t.Fatal(err)
		}
		j, _, err := orders.Claim(ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		add("orders", emq.StateActive, j.ID)
	}
	for i := 0; i < 3; i++ {
		id := mint()
		if _, err := orders.EnqueueAt(ctx, id, []byte(`{"later":true}`), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		add("orders", emq.StateScheduled, id)
	}
	batch := make([]emq.NewJob, 0, 1000)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		if _, err := orders.PushBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := 0; i < pending; i++ {
		id := mint()
		batch = append(batch, emq.NewJob{ID: id, Payload: []byte(`{"customer":"ORD` + strconv.Itoa(i) + `","items":[1,2,3],"card":"4111-1111"}`)})
		add("orders", emq.StatePending, id)
		if len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	emails, _ := c.Queue("emails")
	id := mint()
	if _, err := emails.Push(ctx, id, []byte{0x00, 0xff, 'h', 'i', 0x7f}); err != nil {
		t.Fatal(err)
	}
	add("emails", emq.StatePending, id)
	reports, _ := c.Queue("reports.v2")
	if _, err := reports.Push(ctx, mint(), []byte("plain text")); err != nil {
		t.Fatal(err)
	}
	j, _, err := reports.Claim(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := reports.Bury(ctx, j.ID, j.Token); err != nil {
		t.Fatal(err)
	}
	add("reports.v2", emq.StateDead, j.ID)
	return w
}

// serve runs a dashboard on o (Client filled in with an observing client
// of srv) behind an httptest server.
func serve(t testing.TB, srv *redistest.Server, o dashboard.Options) (*dashboard.Dashboard, *httptest.Server) {
	t.Helper()
	if o.Client == nil {
		o.Client = observe(t, srv)
	}
	d, err := dashboard.New(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(d)
	t.Cleanup(hs.Close)
	return d, hs
}

// noRedirect is an HTTP client that shows redirects instead of following
// them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// get fetches url and returns the status and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := noRedirect.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// commands is how many commands the server ran, INFO left out.
func commands(t testing.TB, srv *redistest.Server) int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		v, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			t.Fatalf("INFO commandstats line %q", line)
		}
		n += v
	}
	return n
}

// commandCalls is how many times the server ran cmd (lower case).
func commandCalls(t testing.TB, srv *redistest.Server, cmd string) int64 {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && name == "cmdstat_"+cmd {
			calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
			v, _ := strconv.ParseInt(calls, 10, 64)
			return v
		}
	}
	return 0
}
