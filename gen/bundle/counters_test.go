package bundle_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestCountersFold runs the bundle's counters layout (the counters key
// type's summary: a bucket <word>:<minute> per minute, the folded totals
// <word>, the last minute folded in folded) on a real server: buckets
// older than 1440 minutes are still read into the totals until the first
// count of a later minute folds them into the totals and deletes them,
// and the totals read the same before and after the fold.
func TestCountersFold(t *testing.T) {
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
	src := map[string]string{}
	for i, s := range p.Scripts {
		src[s.Name] = b.Scripts[i].Source
	}
	events, _ := p.Vocabulary("event")
	completed := ""
	for _, w := range events.Words {
		if w.Word == "completed" {
			completed = w.Word
		}
	}
	if completed == "" {
		t.Fatal("the event vocabulary has no completed")
	}
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := func(typ, id string) string {
		return strings.NewReplacer("<queue>", "q", "<id>", id).Replace(p.KeyShape(model.ScriptKey{Type: typ}))
	}
	counters := key("counters", "")
	tm, err := rc.Do(ctx, rc.B().Time().Build()).AsIntSlice()
	if err != nil {
		t.Fatal(err)
	}
	minute := (tm[0]*1000 + tm[1]/1000) / 60000
	bucket := func(m int64) string { return completed + ":" + strconv.FormatInt(m, 10) }
	if err := rc.Do(ctx, rc.B().Hset().Key(counters).FieldValue().
		FieldValue("folded", strconv.FormatInt(minute-2000, 10)).
		FieldValue(bucket(minute-1999), "5").FieldValue(bucket(minute-1500), "7").FieldValue(bucket(minute-600), "11").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	read := func() (total, at600 int64) {
		t.Helper()
		arr, err := rueidis.NewLuaScript(src["counters"]).Exec(ctx, rc, []string{counters}, []string{"1440"}).ToArray()
		if err != nil || len(arr) != 1441 {
			t.Fatalf("counters: %d records, %v", len(arr), err)
		}
		tot, _ := arr[0].ToArray()
		total, _ = tot[1].AsInt64()
		for _, r := range arr[1:] {
			rec, _ := r.ToArray()
			ms, _ := rec[0].AsInt64()
			if ms == (minute-600)*60000 {
				at600, _ = rec[1].AsInt64()
			}
		}
		return total, at600
	}
	if total, at := read(); total != 23 || at != 11 {
		t.Fatalf("before the fold: total %d, minute -600 %d; want 23 (5+7+11 unfolded) and 11", total, at)
	}
	// A completion counts one in the current minute: its bucket is new, so
	// it folds the two buckets older than 1440 minutes.
	row := key(p.Row.Key, "JOB00000000001")
	field := func(role string) string { f, _ := p.Field(role); return f.Name }
	st, _ := p.State("active")
	rc.Do(ctx, rc.B().Hset().Key(row).FieldValue().FieldValue(field(model.RoleState), st.Name).FieldValue(field(model.RoleToken), "1").FieldValue(field(model.RolePayload), "p").Build())
	rc.Do(ctx, rc.B().Zadd().Key(key(st.Set, "")).ScoreMember().ScoreMember(1e15, "JOB00000000001").Build())
	s, _ := p.Script("complete_result_claim_ids")
	var keys []string
	for _, k := range s.Keys {
		if !k.Repeated {
			keys = append(keys, strings.NewReplacer("<queue>", "q", "<id>", "JOB00000000001").Replace(p.KeyShape(k)))
		}
	}
	if err := rueidis.NewLuaScript(src[s.Name]).Exec(ctx, rc, keys, []string{"JOB00000000001", "1", "30000", "", "0", "0", "0"}).Error(); err != nil {
		t.Fatal(err)
	}
	h, err := rc.Do(ctx, rc.B().Hgetall().Key(counters).Build()).AsStrMap()
	if err != nil {
		t.Fatal(err)
	}
	if h[completed] != "12" || h[bucket(minute-1999)] != "" || h[bucket(minute-1500)] != "" || h[bucket(minute-600)] != "11" {
		t.Fatalf("after the fold: %v; want the folded total 12, the two old buckets gone and minute -600 kept", h)
	}
	if f, _ := strconv.ParseInt(h["folded"], 10, 64); f != minute-1440 && f != minute-1439 {
		t.Fatalf("folded %d; want %d (the current minute less 1440)", f, minute-1440)
	}
	if total, at := read(); total != 24 || at != 11 {
		t.Fatalf("after the fold: total %d, minute -600 %d; want 24 and 11", total, at)
	}
}
