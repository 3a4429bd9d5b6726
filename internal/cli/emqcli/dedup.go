package emqcli

import (
	"fmt"
	"strings"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The inspect subcommands of echomq 2.5.0: a deduplication key's entry,
// and the cancellation of jobs by id or by key.

const dedupHelp = `Prints the entry of each deduplication key KEY of queue Q (the SDK's
Queue.DedupEntries, one read-only dedup_entries call): the job holding it,
the mode it was taken under, when its hold ends (server clock), whether an
admission now would meet the holder (held) or take the key, the holder's
state and the job parked behind it (keep_last). A key without an entry
prints "no entry". Read-only. Exit 0, or 2 on bad input or an error.`

const cancelHelp = `Cancels each job ID of queue Q, or with -key K the jobs of deduplication key
K (its holder and the job parked behind it): a pending, scheduled or active
job's row is deleted with what it left, a cancelled event is reported
(within -events-max), and the lease holder of an active job is told on the
queue's cancel channel, so that a 2.5 worker cancels its handler at once
(the SDK's Queue.CancelIDs and Queue.CancelKey). A dead job, or one that is
gone, is left as it is. Without -yes it prints what it would cancel, cancels
nothing and exits 1. Exit 0 when every job given was cancelled, 1 when one
was not (or without -yes), 2 on bad input, a keyspace it refuses to write,
or an error.`

func runInspectDedup(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, true)
	keys, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	if len(keys) == 0 {
		e.errorf("%s: give one or more deduplication keys", f.fs.Name())
		return ExitUsage
	}
	s, code := open(e, f, false, nil)
	if s == nil {
		return code
	}
	defer s.close()
	es, err := s.q.DedupEntries(s.ctx, keys...)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	idText := func(id emq.ID) string {
		if id.IsZero() {
			return ""
		}
		return id.String()
	}
	if *f.format == "json" {
		out := make([]map[string]any, len(es))
		for i, en := range es {
			exp := int64(0)
			if !en.Expires.IsZero() {
				exp = en.Expires.UnixMilli()
			}
			out[i] = map[string]any{"key": keys[i], "holder": idText(en.Holder), "mode": string(en.Mode), "expires_ms": exp,
				"held": en.Held, wire.FieldState: string(en.State), "parked": idText(en.Parked)}
		}
		writeJSON(e.stdout, out)
		return ExitOK
	}
	for i, en := range es {
		if en.Holder.IsZero() {
			fmt.Fprintf(e.stdout, "%q  no entry\n", keys[i])
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%q  holder %s (%s)  mode %s  held %v", keys[i], en.Holder, orNone(string(en.State)), en.Mode, en.Held)
		if !en.Expires.IsZero() {
			fmt.Fprintf(&b, "  until %s", en.Expires.UTC().Format("2006-01-02T15:04:05.000Z"))
		}
		if !en.Parked.IsZero() {
			fmt.Fprintf(&b, "  parked %s", en.Parked)
		}
		fmt.Fprintln(e.stdout, b.String())
	}
	return ExitOK
}

func orNone(s string) string {
	if s == "" {
		return "in no set"
	}
	return s
}

func runInspectCancel(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, false)
	yes := f.fs.Bool("yes", false, "cancel for real; without it, print what would be cancelled and change nothing")
	key := f.fs.String("key", "", "cancel the jobs of this deduplication key instead of ids")
	eventsMax := f.fs.Int("events-max", 10000, "the events stream's approximate bound for the cancelled events; 0 reports none")
	raw, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	switch {
	case *key != "" && len(raw) > 0:
		e.errorf("%s: give job ids or -key, not both", f.fs.Name())
		return ExitUsage
	case *key == "" && len(raw) == 0:
		e.errorf("%s: give one or more job ids, or -key K", f.fs.Name())
		return ExitUsage
	case *eventsMax < 0:
		e.errorf("%s: -events-max %d is negative", f.fs.Name(), *eventsMax)
		return ExitUsage
	}
	var ids []emq.ID
	s, code := open(e, f, *yes, parseIDs(raw, &ids))
	if s == nil {
		return code
	}
	defer s.close()
	if *key != "" && !*yes {
		es, err := s.q.DedupEntries(s.ctx, *key)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		for _, id := range []emq.ID{es[0].Holder, es[0].Parked} {
			if !id.IsZero() {
				ids = append(ids, id)
			}
		}
	}
	if !*yes {
		for _, id := range ids {
			job, found, err := s.q.Get(s.ctx, id)
			switch {
			case err != nil:
				e.errorf("%v", err)
				return ExitUsage
			case !found:
				fmt.Fprintf(e.stdout, "%s  would not cancel: no such job\n", id)
			case job.State == emq.StateDead:
				fmt.Fprintf(e.stdout, "%s  would not cancel: it is %s\n", id, job.State)
			default:
				fmt.Fprintf(e.stdout, "%s  would cancel: %s\n", id, job.State)
			}
		}
		e.errorf("nothing was cancelled; run again with -yes to cancel")
		return ExitFindings
	}
	if *key != "" {
		cs, err := s.q.CancelKey(s.ctx, *key, *eventsMax)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		if len(cs) == 0 {
			fmt.Fprintf(e.stdout, "%q  nothing to cancel: the key has no live holder\n", *key)
			return ExitFindings
		}
		for _, c := range cs {
			fmt.Fprintf(e.stdout, "%s  cancelled (was %s)\n", c.ID, c.State)
		}
		return ExitOK
	}
	all := true
	for lo := 0; lo < len(ids); lo += emq.MaxCancelIDs {
		page := ids[lo:min(lo+emq.MaxCancelIDs, len(ids))]
		states, err := s.q.CancelIDs(s.ctx, page, *eventsMax)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		for i, st := range states {
			if st == "" {
				all = false
				fmt.Fprintf(e.stdout, "%s  not cancelled: it is not pending, scheduled or active\n", page[i])
				continue
			}
			fmt.Fprintf(e.stdout, "%s  cancelled (was %s)\n", page[i], st)
		}
	}
	if !all {
		return ExitFindings
	}
	return ExitOK
}
