package inspect_test

import (
	"context"
	"errors"
	"github.com/echomq/echomq/internal/literalscan"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/inspect"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

const manifest = "../../protocol.yaml"

func load(t *testing.T, file string) (*model.Protocol, *inspect.Inspector) {
	t.Helper()
	p, err := model.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	in, err := inspect.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, in
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestNoProtocolLiterals scans the hand-written code of inspect (this
// package and the CLI command) for literals the manifest holds: class
// words, field and state names, key prefixes, kinds, reserve members, the
// version. Everything comes from the model.
func TestNoProtocolLiterals(t *testing.T) {
	p, _ := load(t, manifest)
	files, _ := filepath.Glob("*.go")
	literalscan.Scan(t, literalscan.Literals(p), append(files, "../../internal/cli/inspect.go"), "take it from the model")
}

// TestModelAgreesWithSDK: the sets, their order, states and kinds of
// score, and the cursor checks, are the SDK's.
func TestModelAgreesWithSDK(t *testing.T) {
	_, in := load(t, manifest)
	sets := in.Sets()
	if len(sets) != len(emq.Sets()) {
		t.Fatalf("sets %v; the SDK has %v", sets, emq.Sets())
	}
	for i, s := range emq.Sets() {
		got := sets[i]
		if got.Name != string(s) || got.State != string(s.State()) || got.Lex != s.Lex() || (got.AtName() == "") != s.Lex() {
			t.Errorf("set %d = %+v; the SDK's is %s (state %s, lex %v)", i, got, s, s.State(), s.Lex())
		}
		if byState, err := in.Set(string(s.State())); err != nil || byState != got {
			t.Errorf("Set(%q) = %+v, %v", s.State(), byState, err)
		}
		id := "JOB0NgWEfAEJfs"
		for _, c := range []string{id, "1/" + id, "-5/" + id, "x/" + id, "1/" + id + "x", "1", "garbage"} {
			err := in.CheckCursor(got, c)
			_, _, sdkErr := pageCursorSDK(s, c)
			if (err == nil) != sdkErr {
				t.Errorf("CheckCursor(%s, %q) = %v; the SDK accepts it: %v", s, c, err, sdkErr)
			}
			if err != nil && !errors.Is(err, inspect.ErrInput) {
				t.Errorf("CheckCursor error %v is not ErrInput", err)
			}
		}
	}
	if _, err := in.Set("nope"); !errors.Is(err, inspect.ErrInput) {
		t.Errorf("Set(nope) = %v", err)
	}
	for _, q := range append([]string{}, in.Protocol().Queues.Invalid...) {
		if _, sdkErr := emq.NewQueueKeys(q); (in.CheckQueue(q) == nil) != (sdkErr == nil) {
			t.Errorf("CheckQueue(%q) disagrees with the SDK (%v)", q, sdkErr)
		}
	}
	for _, id := range append(append([]string{}, in.Protocol().IDs.Invalid...), "JOB0NgWEfAEJfs", "ORD0NgWEfAEJfs") {
		if _, sdkErr := emq.ParseID(id); (in.CheckID(id) == nil) != (sdkErr == nil) {
			t.Errorf("CheckID(%q) disagrees with the SDK (%v)", id, sdkErr)
		}
	}
}

// pageCursorSDK reports whether the SDK's Page accepts cursor for set s,
// judged by the documented rules: its ParseID, and a decimal score.
func pageCursorSDK(s emq.Set, cursor string) (string, string, bool) {
	if s.Lex() {
		_, err := emq.ParseID(cursor)
		return "", cursor, err == nil
	}
	sc, id, ok := strings.Cut(cursor, "/")
	if _, err := strconv.ParseInt(sc, 10, 64); !ok || err != nil {
		return "", "", false
	}
	_, err := emq.ParseID(id)
	return sc, id, err == nil
}

func TestText(t *testing.T) {
	for in, ok := range map[string]bool{
		"":                true,
		"order 1234":      true,
		"2 × widget ✓ 日本": true,
		"a\nb":            false,
		"a\tb":            false,
		"\x1b[31mred":     false,
		"\x7f":            false,
		"\u0085":          false,
		"abc\u202edcba":   false,
		"\u2066x\u2069":   false,
		"\xff\xfe":        false,
		"a\x00b":          false,
	} {
		s, got := inspect.Text([]byte(in))
		if got != ok || (ok && s != in) {
			t.Errorf("Text(%q) = %q, %v; want ok %v", in, s, got, ok)
		}
	}
}

// TestOlderManifest: a manifest without a doorbell, ring or purge (2.0.0)
// still reads queues; revive works without ringing; purge says the
// manifest has no such script.
func TestOlderManifest(t *testing.T) {
	_, in := load(t, "../../golden/releases/2.0.0.yaml")
	srv := redistest.Start(t)
	c, err := emq.Connect(ctxT(t), emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	q, _ := c.Queue("old")
	ctx := ctxT(t)
	id, _ := c.Mint(emq.WorkKind)
	if _, err := q.Enqueue(ctx, id, []byte("x")); err != nil {
		t.Fatal(err)
	}
	j, _, _ := q.Claim(ctx, time.Minute)
	if err := q.Bury(ctx, j.ID, j.Token); err != nil {
		t.Fatal(err)
	}
	rc := c.Redis()
	sz, err := in.Sizes(ctx, rc, "old")
	if err != nil || sz.Doorbell != nil || len(sz.Sets) != 4 {
		t.Fatalf("sizes with 2.0.0 = %+v, %v; want four sets and no doorbell", sz, err)
	}
	v, err := in.Version(ctx, rc)
	if err != nil || v.Writable() != nil || v.Warning() == "" {
		t.Errorf("a 2.1.0 keyspace read with 2.0.0: %+v %v; want writable, with a warning that it is ahead", v, err)
	}
	if _, err := in.Purge(ctx, rc, "old", []string{id.String()}); err == nil || !strings.Contains(err.Error(), "no purge script") {
		t.Errorf("purge with 2.0.0 = %v", err)
	}
	outs, ring, err := in.Revive(ctx, rc, "old", []string{id.String()})
	if err != nil || len(outs) != 1 || !outs[0].Done || ring != nil {
		t.Errorf("revive with 2.0.0 = %+v, %v, %v", outs, ring, err)
	}
	if info, _, _ := q.Get(ctx, id); info.State != emq.StatePending {
		t.Errorf("the revived job is %s", info.State)
	}
}
