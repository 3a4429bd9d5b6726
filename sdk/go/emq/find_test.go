package emq_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func TestFindJob(t *testing.T) {
	srv := redistest.Start(t)
	c := connect(t, srv)
	ctx := ctxT(t)
	id := mint(t, c, emq.WorkKind)
	for _, name := range []string{"b", "d"} {
		if _, err := queue(t, c, name).Enqueue(ctx, id, []byte("p")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.FindJob(ctx, id, []string{"a", "b", "c", "d"})
	if err != nil || !slices.Equal(got, []string{"b", "d"}) {
		t.Errorf("FindJob = %v %v, want [b d]", got, err)
	}
	if got, err := c.FindJob(ctx, mint(t, c, emq.WorkKind), []string{"a", "b"}); err != nil || len(got) != 0 {
		t.Errorf("FindJob of an unknown id = %v %v", got, err)
	}
	before := callsByCommand(t, c)
	if _, err := c.FindJob(ctx, id, []string{"b", "Bad"}); !errors.Is(err, emq.ErrQueueName) {
		t.Errorf("FindJob with a malformed name: %v", err)
	}
	if _, err := c.FindJob(ctx, emq.ID{}, []string{"b"}); !errors.Is(err, emq.ErrID) {
		t.Errorf("FindJob of the zero id: %v", err)
	}
	if n := callsByCommand(t, c)["exists"] - before["exists"]; n != 0 {
		t.Errorf("refused FindJob calls sent %d EXISTS", n)
	}
}
