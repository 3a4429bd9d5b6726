package emq_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func options(srv *redistest.Server) emq.Options {
	return emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}}
}

func connect(t *testing.T, srv *redistest.Server) *emq.Client {
	t.Helper()
	c, err := emq.Connect(ctxT(t), options(srv))
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func queue(t *testing.T, c *emq.Client, name string) *emq.Queue {
	t.Helper()
	q, err := c.Queue(name)
	if err != nil {
		t.Fatalf("Queue(%q): %v", name, err)
	}
	return q
}

func mint(t *testing.T, c *emq.Client, k emq.Kind) emq.ID {
	t.Helper()
	id, err := c.Mint(k)
	if err != nil {
		t.Fatalf("Mint(%s): %v", k, err)
	}
	return id
}

// do sends a raw command through the client, for inspection.
func do(t *testing.T, c *emq.Client, args ...string) rueidis.RedisResult {
	t.Helper()
	return c.Redis().Do(ctxT(t), c.Redis().B().Arbitrary(args...).Build())
}

func hgetall(t *testing.T, c *emq.Client, key string) map[string]string {
	t.Helper()
	m, err := do(t, c, "HGETALL", key).AsStrMap()
	if err != nil {
		t.Fatalf("HGETALL %s: %v", key, err)
	}
	return m
}
