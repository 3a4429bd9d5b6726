package bundle_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/cases"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestRepeatedKeysLive runs the take script of the golden case
// repeated_keys (KEYS: pending, then a repeated group of rows; ARGV:
// limit, then a repeated group of ids) on a real server: the rendered
// body addresses every key of the group through {{keys_from}}, the guard
// refuses a call whose key group is not one key per id, and a key of
// another type anywhere in the group fails the script before any write.
func TestRepeatedKeysLive(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	patch, err := os.ReadFile(filepath.Join(root, cases.Dir, "repeated_keys", cases.PatchFile))
	if err != nil {
		t.Fatal(err)
	}
	_, manifest, err := cases.Apply(root, patch)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.Parse("protocol.yaml", manifest)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	take, ok := b.Script("take")
	if !ok {
		t.Fatal("the case has no take script")
	}
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lua := rueidis.NewLuaScript(take.Source)
	do := func(args ...string) rueidis.RedisResult { return rc.Do(ctx, rc.B().Arbitrary(args...).Build()) }

	pending := "tq:{q}:pending"
	ids := []string{"JOB00000000001", "JOB00000000002", "JOB00000000003"}
	row := func(id string) string { return "tq:{q}:job:" + id }
	for _, id := range ids {
		if err := do("ZADD", pending, "0", id).Error(); err != nil {
			t.Fatal(err)
		}
		if err := do("HSET", row(id), "state", "pending", "tries", "0").Error(); err != nil {
			t.Fatal(err)
		}
	}
	tries := func(id string) string {
		v, err := do("HGET", row(id), "tries").ToString()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// A key group that is not one key per id is refused, and nothing moves.
	err = lua.Exec(ctx, rc, []string{pending, row(ids[0])}, []string{"5", ids[0], ids[1]}).Error()
	if err == nil || !strings.Contains(err.Error(), "one key per ids") {
		t.Fatalf("two ids, one row key: err = %v, want the cardinality refusal", err)
	}
	if n, _ := do("ZCARD", pending).AsInt64(); n != 3 || tries(ids[0]) != "0" {
		t.Fatalf("after the refusal: %d pending, tries %s; want 3 and 0", n, tries(ids[0]))
	}

	// A key of another type in the group fails the script before it writes.
	if err := do("SET", row("JOB0000000000X"), "x").Error(); err != nil {
		t.Fatal(err)
	}
	err = lua.Exec(ctx, rc, []string{pending, row(ids[0]), row("JOB0000000000X")}, []string{"5", ids[0], "JOB0000000000X"}).Error()
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("a string in the row group: err = %v, want WRONGTYPE", err)
	}
	if n, _ := do("ZCARD", pending).AsInt64(); n != 3 || tries(ids[0]) != "0" {
		t.Fatalf("after WRONGTYPE: %d pending, tries %s; want 3 and 0", n, tries(ids[0]))
	}

	// One key per id: each id's own row is the one written, up to limit.
	n, err := lua.Exec(ctx, rc, []string{pending, row(ids[0]), row(ids[2])}, []string{"5", ids[0], ids[2]}).AsInt64()
	if err != nil || n != 2 {
		t.Fatalf("take of two ids = %d, %v; want 2", n, err)
	}
	if tries(ids[0]) != "1" || tries(ids[1]) != "0" || tries(ids[2]) != "1" {
		t.Fatalf("tries = %s %s %s, want 1 0 1", tries(ids[0]), tries(ids[1]), tries(ids[2]))
	}
	// An empty group is a valid call that takes nothing.
	if n, err := lua.Exec(ctx, rc, []string{pending}, []string{"5"}).AsInt64(); err != nil || n != 0 {
		t.Fatalf("take of no ids = %d, %v; want 0", n, err)
	}
}

// TestRepeatedEntriesLive runs the repeated_entries case's put script, whose
// ARGV group is entries of (id, payload) sent interleaved: the guard
// refuses an odd group or a row count that is not one per entry before
// anything is written, and each entry's payload lands in its own row.
func TestRepeatedEntriesLive(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	patch, err := os.ReadFile(filepath.Join(root, cases.Dir, "repeated_entries", cases.PatchFile))
	if err != nil {
		t.Fatal(err)
	}
	_, manifest, err := cases.Apply(root, patch)
	if err != nil {
		t.Fatal(err)
	}
	p, err := model.Parse("protocol.yaml", manifest)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	put, ok := b.Script("put")
	if !ok {
		t.Fatal("the case has no put script")
	}
	srv := redistest.Start(t)
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lua := rueidis.NewLuaScript(put.Source)
	do := func(args ...string) rueidis.RedisResult { return rc.Do(ctx, rc.B().Arbitrary(args...).Build()) }
	pending := "tq:{q}:pending"
	row := func(id string) string { return "tq:{q}:job:" + id }
	a, c := "JOB00000000001", "JOB00000000002"

	for _, bad := range []struct {
		keys, argv []string
	}{
		{[]string{pending, row(a)}, []string{a}},                             // half an entry
		{[]string{pending, row(a)}, []string{a, "pa", c, "pc"}},              // two entries, one row
		{[]string{pending, row(a), row(c)}, []string{a, "pa"}},               // one entry, two rows
		{[]string{pending, row(a), row(c)}, []string{a, "pa", c, "pc", "x"}}, // an entry and a half
	} {
		err := lua.Exec(ctx, rc, bad.keys, bad.argv).Error()
		if err == nil || !strings.Contains(err.Error(), "one key per entry of (ids, payloads)") {
			t.Errorf("keys %v argv %v: err = %v, want the cardinality refusal", bad.keys, bad.argv, err)
		}
	}
	if n, _ := do("DBSIZE").AsInt64(); n != 0 {
		t.Fatalf("after the refusals the database holds %d keys, want 0", n)
	}

	recs, err := lua.Exec(ctx, rc, []string{pending, row(a), row(c)}, []string{a, "pa", c, "pc"}).ToArray()
	if err != nil || len(recs) != 2 {
		t.Fatalf("put of two entries = %v, %v; want two records", recs, err)
	}
	for id, want := range map[string]string{a: "pa", c: "pc"} {
		if got, _ := do("HGET", row(id), "body").ToString(); got != want {
			t.Errorf("row of %s holds payload %q, want %q", id, got, want)
		}
	}
	if n, _ := do("ZCARD", pending).AsInt64(); n != 2 {
		t.Errorf("%d pending, want 2", n)
	}
}
