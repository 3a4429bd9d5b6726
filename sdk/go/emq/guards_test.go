package emq_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// TestArgumentGuards sends what Lua's tonumber would accept but is no
// decimal integer (nan, inf, 1.5, 0x10) to every script argument of type
// int, through plain EVAL as a client in another language would: each is
// answered ERR and nothing is written or popped.
func TestArgumentGuards(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	q := queue(t, c, "orders")
	ctx := ctxT(t)
	id := mint(t, c, emq.WorkKind)
	if _, err := q.Enqueue(ctx, id, []byte("p")); err != nil {
		t.Fatal(err)
	}
	job, _, err := q.Claim(ctx, 60_000_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Complete(ctx, job.ID, job.Token); err != nil {
		t.Fatal(err)
	}
	// An active job, for the scripts that take a token: the guards must
	// answer before a transition that the current token would allow.
	id3 := mint(t, c, emq.WorkKind)
	if _, err := q.Enqueue(ctx, id3, []byte("a")); err != nil {
		t.Fatal(err)
	}
	job3, ok, err := q.Claim(ctx, 60_000_000_000)
	if err != nil || !ok || job3.ID != id3 || job3.Token != 1 {
		t.Fatalf("Claim = %+v, %v, %v; want %v token 1", job3, ok, err, id3)
	}
	row3, _ := q.Keys().Row(id3)
	id2 := mint(t, c, emq.WorkKind)
	if _, err := q.Enqueue(ctx, id2, []byte("p")); err != nil {
		t.Fatal(err)
	}
	row2, _ := q.Keys().Row(id2)
	before := hgetall(t, c, row2)
	keyspace := queueKeyspace(t, c)
	for _, s := range wire.Scripts() {
		for i, typ := range s.ArgTypes {
			if typ != "int" {
				continue
			}
			// With a token, act on the active job with its current token.
			jobID, jobRow := id2, row2
			for _, at := range s.ArgTypes {
				if at == "token" {
					jobID, jobRow = id3, row3
				}
			}
			for _, bad := range []string{"nan", "inf", "-inf", "1.5", "0x10", "1e3", "", " 1", "+1"} {
				keys := make([]string, len(s.Keys))
				for k, kt := range s.KeyTypes {
					switch {
					case strings.HasPrefix(kt, "reserve:"):
						keys[k], _ = wire.ReserveKey(strings.TrimPrefix(kt, "reserve:"), q.Name())
					default:
						if key, ok := q.Keys().Key(kt); ok {
							keys[k] = key
						} else {
							keys[k] = jobRow
						}
					}
				}
				args := make([]string, len(s.Argv))
				for a, at := range s.ArgTypes {
					switch at {
					case "prefix":
						args[a] = q.Keys().RowPrefix()
					case "id":
						args[a] = jobID.String()
					case "token", "int":
						args[a] = "1"
					default:
						args[a] = "x"
						// A value the script admits where "x" would be
						// refused before the argument under test: a
						// dedup mode (2.5.0), a walk's first cursor.
						switch s.Argv[a] {
						case "mode":
							args[a] = string(wire.DedupUntilDone)
						case "cursor":
							args[a] = "0"
						case "backoff":
							args[a] = string(wire.BackoffInherit)
						case "missed":
							args[a] = string(wire.MissedRunOnce)
						}
					}
				}
				args[i] = bad
				err := s.Lua().Exec(ctx, c.Redis(), keys, args).Error()
				if err == nil || !(strings.Contains(err.Error(), "not an integer") || strings.Contains(err.Error(), "must be integers") ||
					strings.Contains(err.Error(), "non-negative integer") || strings.Contains(err.Error(), "not an integer from") || strings.Contains(err.Error(), "neither 0 nor 1") || strings.Contains(err.Error(), "must be 0 or 1") ||
					strings.Contains(err.Error(), "is not -1, 0 ") || // set_policy's -1 keeps (2.7.0)
					strings.Contains(err.Error(), "is not a period in milliseconds")) { // configure_policy's rate_period_ms (2.8.0)
					t.Errorf("%s with %s=%q answered %v; want an ERR argument guard", s.Name, s.Argv[i], bad, err)
				}
			}
		}
	}
	after := hgetall(t, c, row2)
	if len(after) != len(before) || after[wire.FieldState] != before[wire.FieldState] || after[wire.FieldToken] != before[wire.FieldToken] {
		t.Errorf("the refused calls changed the row: %v -> %v", before, after)
	}
	if n, _ := q.PendingSize(ctx); n != 1 {
		t.Errorf("pending holds %d after the refused calls; want 1", n)
	}
	// Nothing at all was written: the rows, the sets and the doorbell (which
	// no refused call may ring) are as they were.
	if after := queueKeyspace(t, c); !maps.Equal(after, keyspace) {
		for k, v := range after {
			if keyspace[k] != v {
				t.Errorf("the refused calls wrote %s", k)
			}
		}
		for k := range keyspace {
			if _, ok := after[k]; !ok {
				t.Errorf("the refused calls deleted %s", k)
			}
		}
	}
	if n, _ := do(t, c, "EXISTS", q.Keys().Wake).AsInt64(); n != 0 {
		t.Error("a refused call rang the doorbell")
	}
}

// queueKeyspace is every key but the reserve's, with its serialized value
// (DUMP), to tell whether anything was written.
func queueKeyspace(t *testing.T, c *emq.Client) map[string]string {
	t.Helper()
	keys, err := do(t, c, "KEYS", "*").AsStrSlice()
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	out := map[string]string{}
	for _, k := range keys {
		if k == wire.KeyVersion || k == wire.KeyBundle || k == wire.KeyLocks {
			continue // the client's node lease renews itself in the locks
		}
		v, err := do(t, c, "DUMP", k).ToString()
		if err != nil {
			t.Fatalf("DUMP %s: %v", k, err)
		}
		out[k] = v
	}
	return out
}
