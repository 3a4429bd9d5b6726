package emq_test

import (
	"strings"
	"testing"

	"github.com/echomq/echomq/internal/redistest"
	"github.com/echomq/echomq/sdk/go/emq"
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
	id2 := mint(t, c, emq.WorkKind)
	if _, err := q.Enqueue(ctx, id2, []byte("p")); err != nil {
		t.Fatal(err)
	}
	row2, _ := q.Keys().Row(id2)
	before := hgetall(t, c, row2)
	for _, s := range emq.Scripts() {
		for i, typ := range s.ArgTypes {
			if typ != "int" {
				continue
			}
			for _, bad := range []string{"nan", "inf", "-inf", "1.5", "0x10", "1e3", ""} {
				keys := make([]string, len(s.Keys))
				for k, kt := range s.KeyTypes {
					switch {
					case strings.HasPrefix(kt, "reserve:"):
						keys[k], _ = emq.ReserveKey(strings.TrimPrefix(kt, "reserve:"), q.Name())
					default:
						if key, ok := q.Keys().Key(kt); ok {
							keys[k] = key
						} else {
							keys[k] = row2
						}
					}
				}
				args := make([]string, len(s.Argv))
				for a, at := range s.ArgTypes {
					switch at {
					case "prefix":
						args[a] = q.Keys().RowPrefix()
					case "id":
						args[a] = id2.String()
					case "token", "int":
						args[a] = "1"
					default:
						args[a] = "x"
					}
				}
				args[i] = bad
				err := s.Lua().Exec(ctx, c.Redis(), keys, args).Error()
				if err == nil || !(strings.Contains(err.Error(), "not an integer") || strings.Contains(err.Error(), "must be integers")) {
					t.Errorf("%s with %s=%q answered %v; want an ERR argument guard", s.Name, s.Argv[i], bad, err)
				}
			}
		}
	}
	after := hgetall(t, c, row2)
	if len(after) != len(before) || after[emq.FieldState] != before[emq.FieldState] || after[emq.FieldToken] != before[emq.FieldToken] {
		t.Errorf("the refused calls changed the row: %v -> %v", before, after)
	}
	if n, _ := q.PendingSize(ctx); n != 1 {
		t.Errorf("pending holds %d after the refused calls; want 1", n)
	}
}
