package emqcli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// policyRun runs emq policy against srv.
func policyRun(t *testing.T, srv *redistest.Server, args ...string) (int, string, string) {
	t.Helper()
	return run(t, append([]string{"policy", "-addr", srv.Addr(), "-timeout", "10s"}, args...)...)
}

// TestPolicy: emq policy reads, pauses, caps and resumes a queue as the
// SDK does, inspect sizes shows the policy and the running set, and the
// bundle floor is checked unless -force.
func TestPolicy(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	ctx := ctxP(t)
	q, err := c.Queue("orders")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if js, err := q.ClaimMany(ctx, time.Minute, 1); err != nil || len(js) != 1 {
		t.Fatal(js, err)
	}
	if code, out, errs := policyRun(t, srv, "orders"); code != emqcli.ExitOK || out != "queue orders: no policy; 1 leased\n" || errs != "" {
		t.Errorf("policy orders = %d\n%s%s", code, out, errs)
	}
	if code, out, errs := policyRun(t, srv, "orders", "pause"); code != emqcli.ExitOK || !strings.Contains(out, "paused; 1 leased") || errs != "" {
		t.Errorf("policy orders pause = %d\n%s%s", code, out, errs)
	}
	if p, err := q.Policy(ctx); err != nil || !p.Paused {
		t.Errorf("the SDK's Policy after emq policy pause = %+v, %v", p, err)
	}
	code, out, errs := policyRun(t, srv, "-format", "json", "orders", "concurrency", "3")
	var got struct {
		Queue  string
		Policy map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); code != emqcli.ExitOK || err != nil || errs != "" {
		t.Fatalf("policy -format json orders concurrency 3 = %d, %v\n%s%s", code, err, out, errs)
	}
	if p := got.Policy; got.Queue != "orders" || p[string(emq.PolicyPaused)] != true || p[string(emq.PolicyConcurrency)] != float64(3) || p["requires"] != float64(7) || p["leased"] != float64(1) {
		t.Errorf("policy json = %+v", got)
	}
	// inspect sizes shows the policy and names the running set.
	code, out, errs = inspectRun(t, srv, "sizes", "-queue", "orders")
	if code != emqcli.ExitOK || errs != "" || !strings.Contains(out, "policy: paused, concurrency 3; 1 leased") {
		t.Errorf("inspect sizes of a paused queue = %d\n%s%s", code, out, errs)
	}
	if line := strings.Fields(lineWith(out, q.Keys().Running)); len(line) != 4 || line[0] != string(emq.SetActive) || line[2] != "1" {
		t.Errorf("the active set's line under a policy = %v; want its size 1 at %s\n%s", line, q.Keys().Running, out)
	}
	code, out, _ = inspectRun(t, srv, "sizes", "-queue", "orders", "-format", "json")
	if code != emqcli.ExitOK || !strings.Contains(out, `"policy"`) || !strings.Contains(out, q.Keys().Running) {
		t.Errorf("inspect sizes -format json of a paused queue = %d\n%s", code, out)
	}
	if code, out, _ := policyRun(t, srv, "orders", "resume"); code != emqcli.ExitOK || !strings.Contains(out, "concurrency 3; 1 leased") {
		t.Errorf("policy orders resume = %d\n%s", code, out)
	}
	if code, out, _ := policyRun(t, srv, "orders", "concurrency", "0"); code != emqcli.ExitOK || out != "queue orders: no policy; 1 leased\n" {
		t.Errorf("policy orders concurrency 0 = %d\n%s", code, out)
	}
	if code, out, _ := inspectRun(t, srv, "sizes", "-queue", "orders"); code != emqcli.ExitOK || strings.Contains(out, "policy:") || !strings.Contains(out, q.Keys().Active) {
		t.Errorf("inspect sizes once the policy is cleared = %d\n%s", code, out)
	}

	// A recorded release below the floor: refused unless -force.
	if _, err := srv.Do("HSET", wire.KeyBundle, "2.0.0", strings.Repeat("0", 40)); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := policyRun(t, srv, "orders", "pause"); code != emqcli.ExitUsage || out != "" || !strings.Contains(errs, "2.0.0") || !strings.Contains(errs, "-force") && !strings.Contains(errs, "Force") {
		t.Errorf("policy orders pause with a 2.0.0 client recorded = %d\n%s%s", code, out, errs)
	}
	if p, err := q.Policy(ctx); err != nil || p.Paused {
		t.Errorf("the refused pause paused the queue: %+v, %v", p, err)
	}
	if code, out, errs := policyRun(t, srv, "-force", "orders", "pause"); code != emqcli.ExitOK || !strings.Contains(out, "paused") {
		t.Errorf("policy -force orders pause = %d\n%s%s", code, out, errs)
	}
}

// TestPolicyRefusesMalformedInput: a malformed queue, action, count or
// rate limit exits 2 and sends nothing.
func TestPolicyRefusesMalformedInput(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"Orders", "pause"},
		{"orders", "stop"},
		{"orders", "concurrency"},
		{"orders", "concurrency", "-1"},
		{"orders", "concurrency", "many"},
		{"orders", "pause", "now"},
		{"orders", "rate"},
		{"orders", "rate", "100"},
		{"orders", "rate", "0/1s"},
		{"orders", "rate", "-1/1s"},
		{"orders", "rate", "+5/1s"},
		{"orders", "rate", "1000001/1s"},
		{"orders", "rate", "10/0s"},
		{"orders", "rate", "10/1500us"},
		{"orders", "rate", "10/25h"},
		{"orders", "rate", "10/soon"},
		{"orders", "rate", "10/"},
		{"orders", "rate", "on"},
		{"orders", "rate", "10/1s", "now"},
		{},
	} {
		code, out, errs := policyRun(t, srv, args...)
		if code != emqcli.ExitUsage || out != "" || errs == "" {
			t.Errorf("policy %q = %d\n%s%s", args, code, out, errs)
		}
	}
	for name := range commandStats(t, srv) {
		if name != "config|resetstat" {
			t.Errorf("the server received %s", name)
		}
	}
}

// TestPolicyRate: emq policy sets, shows and removes a rate limit as the
// SDK's Queue.SetRateLimit does (a bare unit is one of it), keeps it across
// a pause, prints how long until it admits the next start, and inspect
// sizes shows it.
func TestPolicyRate(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	ctx := ctxP(t)
	q, err := c.Queue("orders")
	if err != nil {
		t.Fatal(err)
	}
	var ids []emq.ID
	for range 3 {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, []byte("x")); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if code, out, errs := policyRun(t, srv, "orders", "rate", "100/1s"); code != emqcli.ExitOK || out != "queue orders: rate 100/1s (admits a start now); 0 leased (the tripwire names minor 8)\n" || errs != "" {
		t.Errorf("policy orders rate 100/1s = %d\n%s%s", code, out, errs)
	}
	if p, err := q.Policy(ctx); err != nil || p.RateLimit != 100 || p.RatePeriod != time.Second || p.Requires != 8 {
		t.Errorf("the SDK's Policy after emq policy rate 100/1s = %+v, %v", p, err)
	}
	if code, out, _ := policyRun(t, srv, "orders", "pause"); code != emqcli.ExitOK || !strings.Contains(out, "paused, rate 100/1s") {
		t.Errorf("policy orders pause on a rate-limited queue = %d\n%s", code, out)
	}
	if code, out, _ := policyRun(t, srv, "orders", "resume"); code != emqcli.ExitOK || !strings.HasPrefix(out, "queue orders: rate 100/1s") {
		t.Errorf("policy orders resume = %d\n%s", code, out)
	}
	// One start admitted per hour: after one lease the next is an hour off.
	if code, out, _ := policyRun(t, srv, "orders", "rate", "1/h"); code != emqcli.ExitOK || !strings.Contains(out, "rate 1/1h0m0s") {
		t.Errorf("policy orders rate 1/h = %d\n%s", code, out)
	}
	if js, err := q.ClaimIDs(ctx, time.Minute, ids); err != nil || len(js) != 1 {
		t.Fatalf("a claim of 3 under a limit of 1 per hour leased %d (%v); want 1", len(js), err)
	}
	code, out, errs := policyRun(t, srv, "-format", "json", "orders")
	var got struct {
		Queue  string
		Policy map[string]any
	}
	if err := json.Unmarshal([]byte(out), &got); code != emqcli.ExitOK || err != nil || errs != "" {
		t.Fatalf("policy -format json orders = %d, %v\n%s%s", code, err, out, errs)
	}
	admit, _ := got.Policy["admit_in_ms"].(float64)
	if p := got.Policy; p[string(emq.PolicyRateLimit)] != float64(1) || p[string(emq.PolicyRatePeriod)+"_ms"] != float64(time.Hour.Milliseconds()) || admit < float64(59*time.Minute.Milliseconds()) || admit > float64(time.Hour.Milliseconds()) || p["leased"] != float64(1) || p["requires"] != float64(8) {
		t.Errorf("policy json = %+v; want rate_limit 1, rate_period_ms 3600000, admit_in_ms about an hour, 1 leased", got)
	}
	if code, out, _ := policyRun(t, srv, "orders"); code != emqcli.ExitOK || !strings.Contains(out, "rate 1/1h0m0s (admits the next start in 59m") {
		t.Errorf("policy orders with the next start an hour off = %d\n%s", code, out)
	}
	if code, out, errs := inspectRun(t, srv, "sizes", "-queue", "orders"); code != emqcli.ExitOK || errs != "" || !strings.Contains(out, "policy: rate 1/1h0m0s (admits the next start in ") {
		t.Errorf("inspect sizes of a rate-limited queue = %d\n%s%s", code, out, errs)
	}
	if code, out, _ := policyRun(t, srv, "orders", "rate", "off"); code != emqcli.ExitOK || out != "queue orders: no policy; 1 leased\n" {
		t.Errorf("policy orders rate off = %d\n%s", code, out)
	}
	if p, err := q.Policy(ctx); err != nil || p.RateLimit != 0 || p.Requires != 0 {
		t.Errorf("the SDK's Policy after emq policy rate off = %+v, %v", p, err)
	}
	// rate 0 removes it too; -force lays the tripwire past a recorded old
	// release, as for a pause.
	if _, err := srv.Do("HSET", wire.KeyBundle, "2.0.0", strings.Repeat("0", 40)); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := policyRun(t, srv, "orders", "rate", "5/s"); code != emqcli.ExitUsage || out != "" || !strings.Contains(errs, "2.0.0") {
		t.Errorf("policy orders rate 5/s with a 2.0.0 client recorded = %d\n%s%s", code, out, errs)
	}
	if code, out, errs := policyRun(t, srv, "-force", "orders", "rate", "5/s"); code != emqcli.ExitOK || !strings.Contains(out, "rate 5/1s") {
		t.Errorf("policy -force orders rate 5/s = %d\n%s%s", code, out, errs)
	}
	if code, out, _ := policyRun(t, srv, "orders", "rate", "0"); code != emqcli.ExitOK || !strings.Contains(out, "no policy") {
		t.Errorf("policy orders rate 0 = %d\n%s", code, out)
	}
}
