package emq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// A server that comes back with another keyspace — here restarted empty
// and fenced by another major before this client's next command — never
// receives that command: the failed connection counts as a reconnect, so
// the client fences on the new connection first and is refused.
func TestFirstCommandAfterReconnectIsFenced(t *testing.T) {
	for i := 0; i < 7; i++ {
		srv := redistest.Start(t)
		c := connect(t, srv)
		q := queue(t, c, "refence")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		srv.Restart() // no persistence: the keyspace comes back empty
		foreign := "echomq:9.0.0"
		if _, err := srv.Do("SET", wire.KeyVersion, foreign); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		id := mint(t, c, emq.WorkKind)
		var err error
		for a := 0; a < 20; a++ {
			if _, err = q.Push(ctx, id, []byte("x")); errors.Is(err, emq.ErrVersionFence) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		var fe *emq.FenceError
		if !errors.As(err, &fe) || fe.Found != foreign {
			t.Fatalf("run %d: push into a foreign keyspace = %v, want *FenceError", i, err)
		}
		if n, _ := srv.Do("DBSIZE"); n != "1" {
			t.Fatalf("run %d: the foreign keyspace holds %s keys, want only its version record", i, n)
		}
		cancel()
		srv.Stop()
	}
}
