package live

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/model"
)

// Keyspace is the model's key grammar and script bundle, for tools that
// work on a named queue of a live keyspace (emqgen inspect) rather than on
// a scratch queue: it checks queue names, builds a queue's keys and runs
// the bundle's scripts on it exactly as the prober does. It never runs the
// fence script.
type Keyspace struct{ m *machine }

// NewKeyspace derives the grammar and renders the bundle from the model.
func NewKeyspace(p *model.Protocol) (*Keyspace, error) {
	m, err := newMachine(p)
	if err != nil {
		return nil, err
	}
	return &Keyspace{m: m}, nil
}

// Protocol returns the model the keyspace was derived from.
func (k *Keyspace) Protocol() *model.Protocol { return k.m.p }

// Fence returns the manifest's version fence, for reading and judging the
// keyspace's version record (Fence.Read); Keyspace never runs its script.
func (k *Keyspace) Fence() *Fence { return k.m.fence }

// CheckQueue refuses a queue name outside the manifest's queue grammar,
// saying why; nothing is sent.
func (k *Keyspace) CheckQueue(q string) error { return k.m.checkQueue(q) }

// QueueKey is the key of the per-queue key type typ of queue q; ok is false
// when typ is not a per-queue key type.
func (k *Keyspace) QueueKey(q, typ string) (key string, ok bool) { return k.m.queueKey(q, typ) }

// RowKey is the key of the row of id in queue q.
func (k *Keyspace) RowKey(q, id string) string { return k.m.rowKey(q, id) }

// Exec runs the bundle's script name on queue q with EVALSHA, falling back
// to EVAL on NOSCRIPT. KEYS are built from the model (the queue's keys, the
// row of the script's id argument, reserve members), ARGV are args by
// argument name with the row prefix filled in. The fence script is
// refused, unsent.
func (k *Keyspace) Exec(ctx context.Context, rc rueidis.Client, q, name string, args map[string]string) rueidis.RedisResult {
	return k.m.exec(ctx, rc, q, name, args)
}
