package emqcli_test

import (
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// inspectRun runs emq inspect SUB against srv.
func inspectRun(t *testing.T, srv *redistest.Server, sub string, args ...string) (int, string, string) {
	t.Helper()
	return run(t, append([]string{"inspect", sub, "-addr", srv.Addr(), "-timeout", "10s"}, args...)...)
}

// seeded is a queue seeded with the SDK in every state.
type seeded struct {
	srv   *redistest.Server
	c     *emq.Client
	q     *emq.Queue
	ids   map[string]emq.ID // by role in the seed
	byID  map[emq.ID]string
	batch []emq.ID // leased together: one shared deadline
}

// The payloads of the seed: text, binary, and text a terminal must not
// get raw.
var seedPayloads = map[string][]byte{
	"text":    []byte("order 1234: 2 × widget"),
	"binary":  {0x00, 0x01, 0xfe, 0xff},
	"newline": []byte("line one\nline two"),
	"escape":  []byte("\x1b[31mred\x1b[0m"),
	"bidi":    []byte("abc\u202edcba"),
	"empty":   {},
}

// seed fills queue orders: three jobs leased by one claim_many (a shared
// deadline) and one by claim, two scheduled, two dead (one of them
// claimed twice), and the rest pending.
func seed(t *testing.T) *seeded {
	t.Helper()
	srv := redistest.Start(t)
	s := &seeded{srv: srv, c: connect(t, srv), ids: map[string]emq.ID{}, byID: map[emq.ID]string{}}
	var err error
	if s.q, err = s.c.Queue("orders"); err != nil {
		t.Fatal(err)
	}
	ctx := ctxP(t)
	names := []string{"batch1", "batch2", "batch3", "claimed", "dead1", "dead2", "text", "binary", "newline", "escape", "bidi", "empty"}
	for _, n := range names {
		id, err := s.c.Mint(emq.WorkKind)
		if err != nil {
			t.Fatal(err)
		}
		s.ids[n], s.byID[id] = id, n
		payload, ok := seedPayloads[n]
		if !ok {
			payload = []byte("payload of " + n)
		}
		if _, err := s.q.Push(ctx, id, payload); err != nil {
			t.Fatal(err)
		}
	}
	k := s.q.Keys()
	call := wire.ClaimManyCall{Pending: k.Pending, Active: k.Active, Wake: k.Wake, Prefix: k.RowPrefix(), LeaseMS: 60000, Count: 3}
	got, err := call.Exec(ctx, s.c.Redis())
	if err != nil || len(got) != 3 {
		t.Fatalf("claim_many = %v, %v", got, err)
	}
	for _, r := range got {
		s.batch = append(s.batch, r.ID)
	}
	time.Sleep(2 * time.Millisecond)
	if j, ok, err := s.q.Claim(ctx, 90*time.Second); err != nil || !ok || j.ID != s.ids["claimed"] {
		t.Fatalf("claim = %v %v %v", j, ok, err)
	}
	// dead1 is claimed, retried, claimed again and buried: attempts 2.
	j, _, _ := s.q.Claim(ctx, time.Minute)
	if _, err := s.q.Retry(ctx, j.ID, j.Token, 0); err != nil {
		t.Fatal(err)
	}
	if n, err := s.q.Promote(ctx, 10); err != nil || n != 1 {
		t.Fatalf("promote = %d, %v", n, err)
	}
	for _, want := range []string{"dead1", "dead2"} {
		j, _, _ := s.q.Claim(ctx, time.Minute)
		if j.ID != s.ids[want] {
			t.Fatalf("claimed %s (%s), want %s", j.ID, s.byID[j.ID], want)
		}
		if err := s.q.Bury(ctx, j.ID, j.Token); err != nil {
			t.Fatal(err)
		}
	}
	for i, d := range []time.Duration{time.Hour, 2 * time.Hour} {
		id, _ := s.c.Mint(emq.WorkKind)
		n := "later" + strconv.Itoa(i+1)
		s.ids[n], s.byID[id] = id, n
		if _, err := s.q.EnqueueAt(ctx, id, []byte(n), time.Now().Add(d)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func connect(t *testing.T, srv *redistest.Server) *emq.Client {
	t.Helper()
	c, err := emq.Connect(ctxP(t), emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestInspectSizes: the sizes are the SDK's Sizes, in text and JSON, and
// the doorbell is reported as the seed left it.
func TestInspectSizes(t *testing.T) {
	s := seed(t)
	want, err := s.q.Sizes(ctxP(t))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := inspectRun(t, s.srv, "sizes", "-queue", "orders", "-format", "json")
	if code != emqcli.ExitOK || errs != "" {
		t.Fatalf("sizes = %d\n%s%s", code, out, errs)
	}
	stateName := wire.FieldState
	var got struct {
		Queue    string
		Sets     []map[string]any
		Doorbell struct {
			Key  string
			Rung bool
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Sets) != len(emq.Sets()) {
		t.Fatalf("sets %v; want %d", got.Sets, len(emq.Sets()))
	}
	for i, set := range emq.Sets() {
		g := got.Sets[i]
		if g["set"] != string(set) || g[stateName] != string(set.State()) || g["key"] != s.q.Keys().Set(set) || g["size"] != float64(want[set]) {
			t.Errorf("set %d = %v; want %s (%s) of size %d", i, g, set, s.q.Keys().Set(set), want[set])
		}
	}
	if got.Queue != "orders" || got.Doorbell.Key != s.q.Keys().Wake || !got.Doorbell.Rung {
		t.Errorf("queue %q, doorbell %+v; want orders and %s rung", got.Queue, got.Doorbell, s.q.Keys().Wake)
	}

	code, out, errs = inspectRun(t, s.srv, "sizes", "-queue", "orders")
	t.Logf("emq inspect sizes -queue orders\n%s", out)
	if code != emqcli.ExitOK || errs != "" {
		t.Fatalf("sizes = %d\n%s%s", code, out, errs)
	}
	for _, set := range emq.Sets() {
		line := strings.Fields(lineWith(out, s.q.Keys().Set(set)))
		if len(line) != 4 || line[0] != string(set) || line[1] != string(set.State()) || line[2] != strconv.FormatInt(want[set], 10) {
			t.Errorf("line of %s = %v; want its state and size %d", set, line, want[set])
		}
	}
	if !strings.Contains(out, "doorbell: rung") {
		t.Errorf("no rung doorbell:\n%s", out)
	}
	if err := s.c.Redis().Do(ctxP(t), s.c.Redis().B().Del().Key(s.q.Keys().Wake).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := inspectRun(t, s.srv, "sizes", "-queue", "orders"); !strings.Contains(out, "doorbell: not rung") {
		t.Errorf("after the marker was taken:\n%s", out)
	}
	// A queue nobody used is all zeros.
	if code, out, _ := inspectRun(t, s.srv, "sizes", "-queue", "nobody", "-format", "json"); code != emqcli.ExitOK || strings.Count(out, `"size": 0`) != len(emq.Sets()) {
		t.Errorf("an unused queue = %d\n%s", code, out)
	}
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// browsePage is one page as the command printed it.
type browsePage struct {
	ids  []string
	next string
	out  string
}

// browseJSON runs browse -format json.
func browseJSON(t *testing.T, srv *redistest.Server, queue string, set emq.Set, cursor string, n int) (browsePage, []map[string]any) {
	t.Helper()
	code, out, errs := inspectRun(t, srv, "browse", "-queue", queue, "-set", string(set), "-n", strconv.Itoa(n), "-cursor", cursor, "-format", "json")
	if code != emqcli.ExitOK || errs != "" {
		t.Fatalf("browse %s -n %d -cursor %q = %d\n%s%s", set, n, cursor, code, out, errs)
	}
	var got struct {
		Entries []map[string]any
		Next    string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	pg := browsePage{next: got.Next, out: out}
	for _, e := range got.Entries {
		pg.ids = append(pg.ids, e["id"].(string))
	}
	return pg, got.Entries
}

// browseText runs browse in text: an id first on each line, then the next
// cursor or "(last page)".
func browseText(t *testing.T, srv *redistest.Server, queue string, set emq.Set, cursor string, n int) browsePage {
	t.Helper()
	args := []string{"-queue", queue, "-set", string(set), "-n", strconv.Itoa(n)}
	if cursor != "" {
		args = append(args, "-cursor", cursor)
	}
	code, out, errs := inspectRun(t, srv, "browse", args...)
	if code != emqcli.ExitOK || errs != "" {
		t.Fatalf("browse %v = %d\n%s%s", args, code, out, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	pg := browsePage{out: out}
	last := lines[len(lines)-1]
	switch {
	case strings.HasPrefix(last, "next: -cursor "):
		pg.next = strings.TrimPrefix(last, "next: -cursor ")
	case last != "(last page)":
		t.Fatalf("browse does not end with the next cursor or (last page):\n%s", out)
	}
	for _, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, "(") {
			continue
		}
		pg.ids = append(pg.ids, strings.Fields(l)[0])
	}
	return pg
}

// walkBoth walks set s page by page with the SDK and with the command
// (text and JSON), from the same cursors: every page and every next cursor
// is the same. between, when not nil, runs after each page. It returns
// every id in order.
func walkBoth(t *testing.T, srv *redistest.Server, q *emq.Queue, s emq.Set, n int, between ...func()) []string {
	t.Helper()
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		ids, nextCursor, err := q.Page(ctxP(t), s, emq.Cursor(cursor), n)
		if err != nil {
			t.Fatal(err)
		}
		next := string(nextCursor)
		var want []string
		for _, id := range ids {
			want = append(want, id.String())
		}
		txt := browseText(t, srv, q.Name(), s, cursor, n)
		js, _ := browseJSON(t, srv, q.Name(), s, cursor, n)
		for _, got := range []browsePage{txt, js} {
			if !slices.Equal(got.ids, want) || got.next != next {
				t.Fatalf("%s page of %d after %q: emq %v next %q; SDK %v next %q\n%s", s, n, cursor, got.ids, got.next, want, next, got.out)
			}
		}
		all = append(all, want...)
		if next == "" {
			return all
		}
		for _, f := range between {
			f()
		}
		if pages > 200 {
			t.Fatal("paging does not end")
		}
		cursor = next
	}
}

// TestInspectBrowseMatchesSDKPage: pages of pending, then of active leased
// in batches (many ids share a deadline), agree with the SDK's Page for
// every page size, 1 and 2 included; each walk shows every id once.
func TestInspectBrowseMatchesSDKPage(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q, err := c.Queue("pages")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxP(t)
	var batch []emq.NewJob
	for i := 0; i < 25; i++ {
		id, _ := c.Mint(emq.WorkKind)
		batch = append(batch, emq.NewJob{ID: id, Payload: []byte(strconv.Itoa(i))})
	}
	if _, err := q.PushBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	sizes := []int{1, 2, 3, 7, 25, 100}
	for _, n := range sizes {
		if got := walkBoth(t, srv, q, emq.SetPending, n); len(got) != len(batch) {
			t.Errorf("pending pages of %d: %d ids, want %d", n, len(got), len(batch))
		}
	}
	for _, n := range []int{9, 9, 5} {
		call := wire.ClaimManyCall{Pending: q.Keys().Pending, Active: q.Keys().Active, Wake: q.Keys().Wake, Prefix: q.Keys().RowPrefix(), LeaseMS: 60000, Count: int64(n)}
		if got, err := call.Exec(ctx, c.Redis()); err != nil || len(got) != n {
			t.Fatalf("claim_many %d = %d jobs, %v", n, len(got), err)
		}
		time.Sleep(3 * time.Millisecond)
	}
	for _, n := range sizes {
		got := walkBoth(t, srv, q, emq.SetActive, n)
		if len(got) != 23 || len(slices.Compact(slices.Sorted(slices.Values(got)))) != 23 {
			t.Errorf("active pages of %d: %v; want 23 ids once each", n, got)
		}
	}
	walkBoth(t, srv, q, emq.SetPending, 2) // the 2 left
	walkBoth(t, srv, q, emq.SetDead, 2)    // empty

	// The set changes between pages: a newer job arrives, the oldest is
	// claimed. The pages still agree, and no id shows twice.
	for i := 0; i < 10; i++ {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	moving := walkBoth(t, srv, q, emq.SetPending, 3, func() {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := q.Push(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := q.Claim(ctx, time.Minute); err != nil {
			t.Fatal(err)
		}
	})
	if len(moving) == 0 || len(slices.Compact(slices.Sorted(slices.Values(moving)))) != len(moving) {
		t.Errorf("pages of a changing set: %v; want each id once", moving)
	}

	// A page of active shows each id's attempts and deadline: the SDK's.
	pg, entries := browseJSON(t, srv, "pages", emq.SetActive, "", 4)
	token, state := wire.FieldToken, wire.FieldState
	for i, e := range entries {
		info, ok, err := q.Get(ctx, emq.MustParseID(pg.ids[i]))
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		at, _ := time.Parse(time.RFC3339Nano, e["lease_deadline"].(string))
		if e[token] != float64(info.Attempts) || e[state] != string(info.State) || !at.Equal(info.At) || e["score"] != float64(info.At.UnixMilli()) {
			t.Errorf("entry %v; SDK Get %+v", e, info)
		}
	}
	txt := browseText(t, srv, "pages", emq.SetActive, "", 2)
	t.Logf("emq inspect browse -queue pages -set active -n 2\n%s", txt.out)
	for _, id := range txt.ids {
		if l := lineWith(txt.out, id); !strings.Contains(l, token+"=1") || !strings.Contains(l, "lease_deadline=") || !strings.Contains(l, "(in ") {
			t.Errorf("line %q lacks the attempts or the deadline", l)
		}
	}
	// A state names its set too; a cursor of the other kind is refused.
	if code, _, errs := inspectRun(t, srv, "browse", "-queue", "pages", "-set", string(emq.StateScheduled), "-n", "1"); code != emqcli.ExitOK {
		t.Errorf("browse by state = %d\n%s", code, errs)
	}
	if code, _, errs := inspectRun(t, srv, "browse", "-queue", "pages", "-set", "active", "-cursor", pg.ids[0]); code != emqcli.ExitUsage || !strings.Contains(errs, "score/id") {
		t.Errorf("an id as the cursor of a scored set = %d\n%s", code, errs)
	}
}

// showJSON runs show -format json.
func showJSON(t *testing.T, s *seeded, id emq.ID) map[string]any {
	t.Helper()
	code, out, errs := inspectRun(t, s.srv, "show", "-queue", "orders", "-format", "json", id.String())
	if code != emqcli.ExitOK || errs != "" {
		t.Fatalf("show %s (%s) = %d\n%s%s", id, s.byID[id], code, out, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return m
}

// TestInspectShowMatchesSDKGet: for a job in every state, show says what
// the SDK's Get says: state, attempts, payload, lease deadline or run-at.
// Payloads are text only when safe; -raw writes the bytes as they are.
func TestInspectShowMatchesSDKGet(t *testing.T) {
	s := seed(t)
	ctx := ctxP(t)
	state, token, payload := wire.FieldState, wire.FieldToken, wire.FieldPayload
	seen := map[emq.State]bool{}
	for name, id := range s.ids {
		info, ok, err := s.q.Get(ctx, id)
		if err != nil || !ok {
			t.Fatalf("SDK Get %s: %v %v", name, ok, err)
		}
		seen[info.State] = true
		m := showJSON(t, s, id)
		var pl []byte
		switch m[payload+"_encoding"] {
		case "text":
			pl = []byte(m[payload].(string))
		case "hex":
			pl, _ = hex.DecodeString(m[payload].(string))
		}
		if m["id"] != id.String() || m[state] != string(info.State) || m[token] != float64(info.Attempts) || string(pl) != string(info.Payload) || m["bytes"] != float64(len(info.Payload)) {
			t.Errorf("show %s = %v; SDK Get %+v", name, m, info)
		}
		var at time.Time
		for _, k := range []string{"lease_deadline", "run_at"} {
			if v, ok := m[k]; ok {
				at, _ = time.Parse(time.RFC3339Nano, v.(string))
			}
		}
		if !at.Equal(info.At) {
			t.Errorf("show %s: at %v; SDK Get %v", name, at, info.At)
		}
		code, out, _ := inspectRun(t, s.srv, "show", "-queue", "orders", "-raw", id.String())
		if code != emqcli.ExitOK || out != string(info.Payload) {
			t.Errorf("show -raw %s = %d %q; want %q", name, code, out, info.Payload)
		}
	}
	for _, st := range emq.States() {
		if !seen[st] {
			t.Errorf("the seed has no job in state %s", st)
		}
	}
	for name, want := range map[string]string{
		"text": "text: order 1234: 2 × widget", "binary": "hex: 0001feff", "newline": "hex: 6c696e65",
		"escape": "hex: 1b5b33316d", "bidi": "hex: 616263e280ae", "empty": "0 bytes",
	} {
		code, out, _ := inspectRun(t, s.srv, "show", s.ids[name].String(), "-queue", "orders")
		if code != emqcli.ExitOK || !strings.Contains(lineWith(out, payload), want) || strings.Contains(out, "\x1b") {
			t.Errorf("show %s = %d; want the payload line to say %q\n%s", name, code, want, out)
		}
	}
	for _, name := range []string{"batch1", "later1", "dead1", "text"} {
		_, out, _ := inspectRun(t, s.srv, "show", "-queue", "orders", s.ids[name].String())
		t.Logf("emq inspect show -queue orders %s   # %s\n%s", s.ids[name], name, out)
	}
	gone, _ := s.c.Mint(emq.WorkKind)
	if code, out, errs := inspectRun(t, s.srv, "show", "-queue", "orders", gone.String()); code != emqcli.ExitFindings || out != "" || !strings.Contains(errs, "no job "+gone.String()) {
		t.Errorf("show of a job never enqueued = %d\n%s%s", code, out, errs)
	}
}

// TestInspectRevive: a dead job goes back to pending, attempts kept, and
// the doorbell rings; a job that is not dead is refused with exit 1 and
// left as it is.
func TestInspectRevive(t *testing.T) {
	s := seed(t)
	ctx := ctxP(t)
	rc := s.c.Redis()
	wake := s.q.Keys().Wake
	if err := rc.Do(ctx, rc.B().Del().Key(wake).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	before, _, _ := s.q.Get(ctx, s.ids["text"])
	dead1, dead2, pending := s.ids["dead1"].String(), s.ids["dead2"].String(), s.ids["text"].String()
	code, out, errs := inspectRun(t, s.srv, "revive", "-queue", "orders", dead1, pending)
	t.Logf("emq inspect revive -queue orders %s %s\n%s%s", dead1, pending, out, errs)
	if code != emqcli.ExitFindings {
		t.Fatalf("revive of a dead and a pending job = %d; want %d\n%s%s", code, emqcli.ExitFindings, out, errs)
	}
	if lineWith(out, dead1) != dead1+"  revived" || !strings.HasPrefix(lineWith(out, pending), pending+"  not revived: it is not dead") {
		t.Errorf("outcomes not reported:\n%s", out)
	}
	if !strings.Contains(out, "doorbell  rung") {
		t.Errorf("the ring is not reported:\n%s", out)
	}
	info, _, _ := s.q.Get(ctx, s.ids["dead1"])
	if info.State != emq.StatePending || info.Attempts != 2 {
		t.Errorf("revived job = %+v; want pending with attempts 2", info)
	}
	if n, err := rc.Do(ctx, rc.B().Llen().Key(wake).Build()).AsInt64(); err != nil || n != 1 {
		t.Errorf("doorbell holds %d (%v); want the marker", n, err)
	}
	if after, _, _ := s.q.Get(ctx, s.ids["text"]); after.State != before.State || after.Attempts != before.Attempts {
		t.Errorf("the pending job changed: %+v -> %+v", before, after)
	}
	if code, out, errs := inspectRun(t, s.srv, "revive", "-queue", "orders", dead2); code != emqcli.ExitOK || !strings.Contains(out, "doorbell  already rung") {
		t.Errorf("revive of a dead job = %d\n%s%s", code, out, errs)
	}
	if sz, _ := s.q.Sizes(ctx); sz[emq.SetDead] != 0 {
		t.Errorf("dead holds %d after both revives", sz[emq.SetDead])
	}
}

// TestInspectPurge: without -yes nothing changes and the command says what
// it would delete (exit 1); with -yes a dead job is gone for good and a job
// that is not dead is left (exit 1).
func TestInspectPurge(t *testing.T) {
	s := seed(t)
	ctx := ctxP(t)
	rc := rclient(t, s.srv.Addr(), 0)
	dead1, dead2, active := s.ids["dead1"].String(), s.ids["dead2"].String(), s.ids["claimed"].String()
	gone, _ := s.c.Mint(emq.WorkKind)
	before := snapshot(t, rc)
	code, out, errs := inspectRun(t, s.srv, "purge", "-queue", "orders", dead1, active, gone.String())
	t.Logf("emq inspect purge -queue orders %s %s %s\n%s%s", dead1, active, gone, out, errs)
	if code != emqcli.ExitFindings || !strings.Contains(errs, "-yes") {
		t.Fatalf("purge without -yes = %d; want %d\n%s%s", code, emqcli.ExitFindings, out, errs)
	}
	if !strings.Contains(lineWith(out, dead1), "would purge") || !strings.Contains(lineWith(out, active), "would not purge: it is active, not dead") || !strings.Contains(lineWith(out, gone.String()), "no such job") {
		t.Errorf("the dry run does not say what it would do:\n%s", out)
	}
	if after := snapshot(t, rc); !equal(before, after) {
		t.Fatalf("purge without -yes changed the keyspace")
	}
	code, out, errs = inspectRun(t, s.srv, "purge", "-yes", "-queue", "orders", dead1, active)
	t.Logf("emq inspect purge -yes -queue orders %s %s\n%s%s", dead1, active, out, errs)
	if code != emqcli.ExitFindings {
		t.Fatalf("purge -yes of a dead and an active job = %d\n%s%s", code, out, errs)
	}
	if _, ok, _ := s.q.Get(ctx, s.ids["dead1"]); ok {
		t.Error("the purged job is still there")
	}
	if info, _, _ := s.q.Get(ctx, s.ids["claimed"]); info.State != emq.StateActive {
		t.Errorf("the active job became %+v", info)
	}
	if code, _, errs := inspectRun(t, s.srv, "purge", "-queue", "orders", "-yes", dead2); code != emqcli.ExitOK {
		t.Errorf("purge -yes of a dead job = %d\n%s", code, errs)
	}
	if sz, _ := s.q.Sizes(ctx); sz[emq.SetDead] != 0 {
		t.Errorf("dead holds %d after both purges", sz[emq.SetDead])
	}
	for _, id := range []string{dead1, dead2} {
		if n, _ := rc.Do(ctx, rc.B().Exists().Key(s.q.Keys().RowPrefix()+id).Build()).AsInt64(); n != 0 {
			t.Errorf("the row of %s survived", id)
		}
	}
}

// commandStats is INFO commandstats: command name -> calls line.
func commandStats(t *testing.T, srv *redistest.Server) map[string]string {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(info, "\n") {
		if name, rest, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && strings.HasPrefix(name, "cmdstat_") {
			out[strings.TrimPrefix(name, "cmdstat_")] = rest
		}
	}
	return out
}

// TestInspectRefusesMalformedInput: a malformed queue name, id, set or
// cursor exits 2 with a clear message, and nothing is sent: the server
// sees no command (not even a connection's HELLO) and the keyspace is as
// it was.
func TestInspectRefusesMalformedInput(t *testing.T) {
	s := seed(t)
	s.c.Close() // it releases its node lease: a write
	rc := rclient(t, s.srv.Addr(), 0)
	before := snapshot(t, rc)
	rc.Close()
	id := s.ids["dead1"].String()
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"sizes", "-queue", "Orders"}, `malformed queue name "Orders"`},
		{[]string{"sizes", "-queue", "a{b}"}, "a queue name matches"},
		{[]string{"browse", "-queue", "a:b", "-set", "pending"}, "malformed"},
		{[]string{"browse", "-queue", "orders", "-set", "nope"}, `"nope" is not a set`},
		{[]string{"browse", "-queue", "orders", "-set", "active", "-cursor", "garbage"}, `cursor "garbage"`},
		{[]string{"browse", "-queue", "orders", "-set", "pending", "-cursor", "1/" + id}, `cursor "1/`},
		{[]string{"show", "-queue", "orders", id[:13]}, "13 bytes"},
		{[]string{"show", "-queue", "orders", "job" + id[3:]}, "not 3 ASCII capitals"},
		{[]string{"show", "-queue", " orders", id}, "malformed"},
		{[]string{"revive", "-queue", "orders", id, id + "X"}, "15 bytes"},
		{[]string{"revive", "-queue", "-orders", id}, "malformed"},
		{[]string{"purge", "-yes", "-queue", "orders", id, "JOBzzzzzzzzzzz"}, "base62 snowflake"},
		{[]string{"purge", "-yes", "-queue", strings.Repeat("a", 65), id}, "malformed"},
	}
	if _, err := s.srv.Do("CONFIG", "RESETSTAT"); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		code, out, errs := inspectRun(t, s.srv, c.args[0], c.args[1:]...)
		if code != emqcli.ExitUsage || out != "" || !strings.Contains(errs, c.msg) || !strings.Contains(errs, "nothing was sent") {
			t.Errorf("inspect %q = %d; want %d and a message with %q\n%s%s", c.args, code, emqcli.ExitUsage, c.msg, out, errs)
		}
	}
	for name := range commandStats(t, s.srv) {
		if name != "info" && name != "config|resetstat" {
			t.Errorf("the server received %s", name)
		}
	}
	if after := snapshot(t, rclient(t, s.srv.Addr(), 0)); !equal(before, after) {
		t.Error("the keyspace changed")
	}
}

// TestInspectForeignKeyspace: a keyspace whose version record is of
// another major, or absent, is never written: revive and purge -yes exit 2
// saying why, and the keyspace is byte for byte as it was; the readers
// warn and read.
func TestInspectForeignKeyspace(t *testing.T) {
	s := seed(t)
	ctx := ctxP(t)
	rc := rclient(t, s.srv.Addr(), 0)
	dead := s.ids["dead1"].String()
	other := recordOf(wire.VersionMajor+1, 0, 0)
	for _, tc := range []struct {
		name, why string
		plant     rueidis.Completed
	}{
		{"another major", "another major", rc.B().Set().Key(wire.KeyVersion).Value(other).Build()},
		{"not a record", "another major", rc.B().Set().Key(wire.KeyVersion).Value("garbage").Build()},
		{"absent", "no version record", rc.B().Del().Key(wire.KeyVersion).Build()},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			if err := rc.Do(ctx, tc.plant).Error(); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, rc)
			for _, args := range [][]string{{"revive", "-queue", "orders", dead}, {"purge", "-yes", "-queue", "orders", dead}} {
				code, out, errs := inspectRun(t, s.srv, args[0], args[1:]...)
				if code != emqcli.ExitUsage || out != "" || !strings.Contains(errs, "refusing to write") || !strings.Contains(errs, tc.why) {
					t.Errorf("inspect %v = %d; want %d saying %q\n%s%s", args, code, emqcli.ExitUsage, tc.why, out, errs)
				}
			}
			if after := snapshot(t, rc); !equal(before, after) {
				t.Error("a refused write changed the keyspace")
			}
			code, out, errs := inspectRun(t, s.srv, "sizes", "-queue", "orders")
			if code != emqcli.ExitOK || !strings.Contains(out, s.q.Keys().Dead) || !strings.HasPrefix(errs, "emq: warning: ") || !strings.Contains(errs, tc.why) {
				t.Errorf("sizes = %d; want the sizes and a warning\n%s%s", code, out, errs)
			}
			code, _, errs = inspectRun(t, s.srv, "purge", "-queue", "orders", dead)
			if code != emqcli.ExitFindings || !strings.Contains(errs, "-yes would be refused") {
				t.Errorf("purge without -yes = %d; want %d saying -yes would be refused\n%s", code, emqcli.ExitFindings, errs)
			}
		})
	}
	// A keyspace ahead of the SDK (a higher minor of its major) is read
	// with a warning that it is ahead, and written: minors are additive.
	ahead := recordOf(wire.VersionMajor, wire.VersionMinor+1, 0)
	if err := rc.Do(ctx, rc.B().Set().Key(wire.KeyVersion).Value(ahead).Build()).Error(); err != nil {
		t.Fatal(err)
	}
	code, out, errs := inspectRun(t, s.srv, "revive", "-queue", "orders", dead)
	if code != emqcli.ExitOK || !strings.Contains(out, dead+"  revived") || !strings.HasPrefix(errs, "emq: warning: ") || !strings.Contains(errs, "ahead") {
		t.Errorf("revive on a keyspace ahead = %d; want it revived with a warning\n%s%s", code, out, errs)
	}
	if v, _ := rc.Do(ctx, rc.B().Get().Key(wire.KeyVersion).Build()).ToString(); v != ahead {
		t.Errorf("the record became %q", v)
	}
}

// TestInspectUsage: every subcommand explains itself with -h; bad flags
// and missing arguments exit 2.
func TestInspectUsage(t *testing.T) {
	if code, out, errs := run(t, "inspect", "-h"); code != emqcli.ExitOK || errs != "" || !strings.Contains(out, "sizes") || !strings.Contains(out, "purge") {
		t.Errorf("inspect -h = %d\n%s%s", code, out, errs)
	}
	if code, _, _ := run(t, "inspect"); code != emqcli.ExitUsage {
		t.Errorf("inspect without a subcommand = %d", code)
	}
	if code, _, errs := run(t, "inspect", "nope"); code != emqcli.ExitUsage || !strings.Contains(errs, "unknown subcommand") {
		t.Errorf("inspect nope = %d\n%s", code, errs)
	}
	for sub, flags := range map[string][]string{
		"sizes":  {"-format", "doorbell"},
		"browse": {"-set", "-n", "-cursor", "score/id"},
		"show":   {"-raw", "hex"},
		"revive": {"doorbell", "ring script"},
		"purge":  {"-yes", "for good"},
	} {
		code, out, errs := run(t, "inspect", sub, "-h")
		if code != emqcli.ExitOK || errs != "" || !strings.HasPrefix(out, "Usage: emq inspect "+sub+" -queue Q") {
			t.Errorf("inspect %s -h = %d\n%s%s", sub, code, out, errs)
		}
		for _, want := range append(flags, "-queue", "-addr", "-user", "-password", "EMQ_REDIS_PASSWORD", "-tls", "-tls-ca", "-tls-server-name", "-timeout", "before anything is sent", "refuse", "emq.Observe") {
			if !strings.Contains(out, want) {
				t.Errorf("inspect %s -h does not mention %q", sub, want)
			}
		}
		if sub == "browse" {
			t.Logf("emq inspect browse -h\n%s", out)
		}
	}
	for _, args := range [][]string{
		{"sizes"}, {"sizes", "-queue", "q", "extra"}, {"sizes", "-queue", "q", "-format", "yaml"},
		{"browse", "-queue", "q"}, {"browse", "-queue", "q", "-set", "pending", "-n", "0"},
		{"show", "-queue", "q"}, {"show", "-queue", "q", "-raw", "-format", "json", "JOB0NgWEfAEJfs"},
		{"revive", "-queue", "q"}, {"purge", "-queue", "q", "-yes"}, {"sizes", "-queue", "q", "-nope"},
		{"sizes", "-queue", "q", "-addr", "nohostport"}, {"sizes", "-queue", "q", "-timeout", "0s"},
	} {
		if code, _, errs := run(t, append([]string{"inspect"}, args...)...); code != emqcli.ExitUsage || errs == "" {
			t.Errorf("inspect %v = %d; want %d with a message\n%s", args, code, emqcli.ExitUsage, errs)
		}
	}
}
