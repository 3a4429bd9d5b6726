package emq

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// FindJob returns the queues among names that hold a row for id, in the
// order of names: where a job is, when its queue is not known. It sends
// one EXISTS per queue, all in one pipelined round trip. Every name and
// the id are checked, and more than MaxStatsQueues names are refused with
// ErrArgument, before anything is sent. It only reads, also on an
// observing client.
func (c *Client) FindJob(ctx context.Context, id ID, names []string) (_ []string, err error) {
	defer c.afterFailure(ctx, &err)
	if len(names) > MaxStatsQueues {
		return nil, errorf("%w: %d queues, more than %d", ErrArgument, len(names), MaxStatsQueues)
	}
	rows := make([]string, len(names))
	for i, n := range names {
		k, err := wire.NewQueueKeys(n)
		if err != nil {
			return nil, err
		}
		if rows[i], err = k.Row(id); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	if err := c.ensureRead(ctx); err != nil {
		return nil, err
	}
	cmds := make(rueidis.Commands, len(rows))
	for i, r := range rows {
		cmds[i] = c.rc.B().Exists().Key(r).Build()
	}
	var found []string
	for i, res := range c.rc.DoMulti(ctx, cmds...) {
		n, err := res.AsInt64()
		if err != nil {
			return nil, errorf("emq: finding %s in %s: %w", id, names[i], err)
		}
		if n > 0 {
			found = append(found, names[i])
		}
	}
	return found, nil
}
