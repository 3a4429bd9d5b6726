package emq

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/probe"
)

// RunProbes runs every probe of the manifest (Probes) against the client's
// keyspace, each on a fresh scratch queue with fresh ids, and removes what
// each wrote. The transcript has one line per check and ends PASS n/m. It
// does not fence first: a keyspace the fence would refuse shows up as
// failed checks, not as an error.
func (c *Client) RunProbes(ctx context.Context) (*probe.Transcript, error) {
	return probe.Run(ctx, Probes(), func(ctx context.Context) (probe.Runtime, error) {
		id, err := c.Mint(WorkKind)
		if err != nil {
			return nil, err
		}
		keys, err := NewQueueKeys("emqprobe-" + strings.ToLower(id.String()))
		if err != nil {
			return nil, err
		}
		return &probeRuntime{c: c, keys: keys, ids: map[string]ID{}}, nil
	})
}

// probeRuntime is one probe's scratch queue and ids.
type probeRuntime struct {
	c    *Client
	keys QueueKeys
	ids  map[string]ID
}

// id returns the id variable name: a registered kind in lower case, with an
// optional digit to tell several apart (job, job2, ord), minted on first use.
func (r *probeRuntime) id(name string) (ID, bool) {
	if id, ok := r.ids[name]; ok {
		return id, true
	}
	kind := Kind(strings.ToUpper(strings.TrimRight(name, "0123456789")))
	if len(kind) != KindLength || !kind.Registered() {
		return ID{}, false
	}
	id, err := r.c.Mint(kind)
	if err != nil {
		return ID{}, false
	}
	r.ids[name] = id
	return id, true
}

func (r *probeRuntime) Lookup(name string) (string, bool) {
	switch name {
	case probe.VarQueue:
		return r.keys.Queue(), true
	case probe.VarVersion:
		return VersionRecord, true
	case probe.VarSemver:
		return Version, true
	case probe.VarBundle:
		return BundleDigest, true
	}
	kind, arg, _ := strings.Cut(name, ":")
	switch kind {
	case probe.KindKey:
		return r.keys.Key(arg)
	case probe.KindRow:
		id, ok := r.id(arg)
		if !ok {
			return "", false
		}
		row, err := r.keys.Row(id)
		return row, err == nil
	case probe.KindReserve:
		k, err := ReserveKey(arg, r.keys.Queue())
		return k, err == nil
	case probe.KindField:
		return FieldByRole(arg)
	case probe.KindState:
		s, ok := ParseState(arg)
		return string(s), ok
	}
	id, ok := r.id(name)
	return id.String(), ok
}

func (r *probeRuntime) RunScript(ctx context.Context, name string, args map[string]string) rueidis.RedisResult {
	s := ScriptNamed(name)
	if s == nil {
		return rueidis.NewErrorResult(fmt.Errorf("no script %q in the bundle", name))
	}
	argv := make([]string, len(s.Argv))
	for i, a := range s.Argv {
		if s.ArgTypes[i] == "prefix" {
			argv[i] = r.keys.RowPrefix()
		} else {
			argv[i] = args[a]
		}
	}
	keys := make([]string, len(s.Keys))
	for i, typ := range s.KeyTypes {
		if member, ok := strings.CutPrefix(typ, "reserve:"); ok {
			k, err := ReserveKey(member, r.keys.Queue())
			if err != nil {
				return rueidis.NewErrorResult(err)
			}
			keys[i] = k
		} else if k, ok := r.keys.Key(typ); ok {
			keys[i] = k
		} else {
			id, err := ParseID(args["id"])
			if err != nil {
				return rueidis.NewErrorResult(err)
			}
			if keys[i], err = r.keys.Row(id); err != nil {
				return rueidis.NewErrorResult(err)
			}
		}
	}
	return s.Lua().Exec(ctx, r.c.rc, keys, argv)
}

func (r *probeRuntime) Do(ctx context.Context, cmd []string) rueidis.RedisResult {
	return r.c.rc.Do(ctx, r.c.rc.B().Arbitrary(cmd...).Build())
}

func (r *probeRuntime) ReplyElements(script string) []string {
	s := ScriptNamed(script)
	if s == nil {
		return nil
	}
	return s.replyElements
}

func (r *probeRuntime) FenceAdmits(record string) bool {
	_, err := CheckVersionRecord(record)
	return err == nil
}

// Close deletes the scratch queue's keys and the rows of every id minted.
func (r *probeRuntime) Close(ctx context.Context) error {
	var keys []string
	for _, s := range Sets() {
		keys = append(keys, r.keys.Set(s))
	}
	for _, id := range r.ids {
		row, _ := r.keys.Row(id)
		keys = append(keys, row)
	}
	if k, err := KeyMigration(r.keys.Queue()); err == nil {
		if err := r.c.rc.Do(ctx, r.c.rc.B().Del().Key(k).Build()).Error(); err != nil {
			return err
		}
	}
	// One DEL per key: rows and sets share the queue's slot, but a cluster
	// client is spared any cross-slot question.
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = r.c.rc.B().Del().Key(k).Build()
	}
	for _, res := range r.c.rc.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}
