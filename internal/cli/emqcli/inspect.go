package emqcli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/echomq/echomq/internal/cmdflag"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// inspectSub is one subcommand of inspect.
type inspectSub struct {
	synopsis string
	summary  string
	help     string
	run      func(e *env, sub inspectSub, name string, args []string) int
}

// inspectOrder lists the subcommands readers first.
var inspectOrder = []string{"queues", "sizes", wire.ScriptCounters.Name, wire.ScriptEvents.Name, "browse", "show", wire.ScriptDedupEntries.Name, wire.ScriptListSchedulers.Name, "revive", "purge", wire.ScriptCancelIDs.Name}

func inspectSubs() map[string]inspectSub {
	return map[string]inspectSub{
		"queues": {"[-format text|json]", "every queue of the keyspace, with the size of each of its sets",
			`Lists the queues found in the keyspace (the SDK's Client.ListQueues: a SCAN
of every node for the sets of well-formed queues, never KEYS), sorted, each
with the size of every set (ZCARD) and the total. A queue whose sets are all
empty has no key, and is not found. When the walk stopped at its bounds the
list is marked incomplete. Read-only. Exit 0, or 2 on bad input or an
error.`, runInspectQueues},
		"sizes": {"-queue Q [-format text|json]", "the size of every set of a queue, and whether its doorbell is rung",
			`Prints the size of every set of queue Q (ZCARD), in the SDK's order with its
key, and whether the queue's doorbell is rung (the marker idle workers wait
for is there). A queue with a policy (echomq 2.7.0: emq policy) also shows
it, paused and its concurrency cap, and its leased jobs are in the running
set, whose key the active row names. Read-only. Exit 0, or 2 on bad input or an error.`, runInspectSizes},
		wire.ScriptEvents.Name:   {"-queue Q [-after C] [-n N] [-follow] [-format text|json]", "a queue's events, oldest first, or -follow them as they come", eventsHelp, runInspectEvents},
		wire.ScriptCounters.Name: {"-queue Q [-minutes N] [-format text|json]", "the settle counters of a queue: totals and the last minutes", countersHelp, runInspectCounters},
		"browse": {"-queue Q -set S [-n N] [-cursor C] [-format text|json]", "a page of a set, newest first",
			`Prints up to N ids of set S of queue Q, newest first, one per line with its
attempts and, in a scored set, the time its score is (the lease deadline of
an active job, the run-at of a scheduled one, server clock), then the cursor
of the next page ("next: -cursor C") or "(last page)". S is a set's name or
the state of the ids it holds. In the dead set each job also shows its last
recorded failure: its class and the first line of its error (echomq 2.3.0).

Pages and cursors are the SDK's Queue.Page: an id for a set whose members
all score zero (newest first is reverse mint order), "score/id" for a scored
set (latest first, ties by id). An id never shows twice across pages, and an
id present throughout is never skipped, however the set changes between
pages. Read-only. Exit 0, or 2 on bad input or an error.`, runInspectBrowse},
		"show": {"-queue Q [-format text|json | -raw] ID", "one job: state, attempts, payload, lease deadline or run-at",
			`Prints job ID of queue Q: its state, attempts, payload, and the lease
deadline of an active job or the run-at of a scheduled one (server clock),
its failure history (echomq 2.3.0: each recorded failed attempt, oldest
first, with its time, class, worker and the first line of its error) and,
for a dead job, when it died ("not recorded" when the client that settled
its last attempt recorded nothing), and its last progress report (echomq
2.4.0). A job completed by a worker that keeps results has no row but a
completion record: show prints when it was completed, by which attempt, and
its result. Progress and result are previews of at most 200 bytes. The payload is printed as text when it is valid UTF-8 without control or
bidirectional-control characters, and in hex otherwise; -raw writes its
bytes to stdout exactly, and nothing else. A job whose row and sets disagree
(the sets invariant) is shown with a warning. Read-only. Exit 0, 1 when the
job does not exist (and no completion record of it was kept; -raw: when it
has no row), 2 on bad input or an error.`, runInspectShow},
		wire.ScriptDedupEntries.Name:   {"-queue Q [-format text|json] KEY...", "the entries of deduplication keys: holder, mode, hold", dedupHelp, runInspectDedup},
		wire.ScriptListSchedulers.Name: {"-queue Q [-n N] [-offset N] [-runs K] [-format text|json] [ID...]", "a queue's job schedulers: schedule, next slot and runs, last run", schedulersHelp, runInspectSchedulers},
		wire.ScriptCancelIDs.Name:      {"-queue Q [-yes] [-events-max N] (ID... | -key K)", "cancel pending, scheduled or active jobs (needs -yes)", cancelHelp, runInspectCancel},
		"revive": {"-queue Q (ID... | -all [-dry-run])", "move dead jobs back to pending and ring the doorbell",
			`Revives each dead job ID of queue Q, or with -all every job of its dead set
(read first, then revived 100 at a time); -dry-run prints what would be
revived and changes nothing (exit 0). Revives each dead job ID of queue Q (it goes back to pending, its attempts
kept; the SDK's Queue.ReviveAll), then, when one was revived, rings the
queue's doorbell once with the ring script so that an idle worker wakes. Prints each outcome.
Exit 0 when every job was revived, 1 when one was not dead (it is left as it
is), 2 on bad input, a keyspace it refuses to write, or an error.`, runInspectRevive},
		"purge": {"-queue Q [-yes | -dry-run] (ID... | -all)", "delete dead jobs for good (needs -yes)",
			`With -all the jobs are every job of the queue's dead set (read first).
-dry-run prints what would be purged, deletes nothing and exits 0.
Without -yes, reads each job ID of queue Q and prints what purge would
delete, deletes nothing, and exits 1. With -yes, purges each (the SDK's
Queue.Purge): a dead job's row and id are deleted for good, any other job is
left as it is. Prints each outcome. Exit 0 when every job was purged, 1 when
one was not dead (or without -yes), 2 on bad input, a keyspace it refuses to
write, or an error.`, runInspectPurge},
	}
}

var inspectSafety = `The queue name, the ids, the set and the cursor are checked by the SDK
(its queue grammar, id canon and cursors) before anything is sent; a
malformed one exits 2 without connecting.

The client observes (emq.Observe): the fence never runs, and neither the
version record nor the bundle identity is written; no snowflake node is
leased. revive and purge -yes refuse (exit 2) to write a keyspace whose
record is absent (no client has fenced it) or of another major or protocol
than the SDK's; the read-only subcommands warn on stderr and proceed.

Connects like emq probe; the password may come from $` + PasswordEnv + `.
The user needs GET on the version record, and on the queue's keys ZCARD,
EXISTS, ZRANGE, ZSCORE, HGETALL, HMGET, HGET, HLEN and TIME to read (and
EVALSHA_RO and EVAL_RO for the read-only scripts, XLEN and XRANGE for
events, XREAD for events -follow), EVALSHA and EVAL (and what the scripts
call) to revive and purge.`

func runInspect(e *env, args []string) int {
	subs := inspectSubs()
	if len(args) == 0 || isHelp(args[0]) {
		w := e.stdout
		if len(args) == 0 {
			w = e.stderr
		}
		fmt.Fprintln(w, "Usage: emq inspect <subcommand> -queue Q [flags] [args]")
		fmt.Fprintln(w, "\nReads one queue of a live keyspace, and revives or purges its dead jobs,\nthrough the Go SDK.\n\nSubcommands:")
		for _, n := range inspectOrder {
			fmt.Fprintf(w, "  %-7s %s\n", n, subs[n].summary)
		}
		fmt.Fprintln(w, "\nRun emq inspect <subcommand> -h for its flags.")
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	sub, ok := subs[args[0]]
	if !ok {
		e.errorf("inspect: unknown subcommand %q (run emq inspect -h)", args[0])
		return ExitUsage
	}
	return sub.run(e, sub, args[0], args[1:])
}

// inspectFlags is what every inspect subcommand takes.
type inspectFlags struct {
	fs     *cmdflag.FlagSet
	conn   conn
	queue  *string
	format *string // nil for subcommands without -format
}

func newInspectFlags(e *env, name string, sub inspectSub, formats bool) *inspectFlags {
	help := sub.help + "\n\n" + inspectSafety
	f := &inspectFlags{fs: e.flags("inspect "+name, sub.synopsis+" "+connSynopsis, help)}
	f.conn.flags(f.fs.FlagSet)
	f.queue = f.fs.String("queue", "", "the queue (required)")
	if formats {
		f.format = f.fs.String("format", "text", "the output: text or json")
	}
	return f
}

// parse parses flags anywhere among the arguments (show -queue Q ID and
// show ID -queue Q alike) and returns the arguments. It checks -queue and
// -format.
func (f *inspectFlags) parse(e *env, args []string) ([]string, int, bool) {
	if code, ok := f.fs.Parse(args); !ok {
		return nil, code, false
	}
	pos := f.fs.Args()
	if *f.queue == "" {
		e.errorf("%s: -queue is required", f.fs.Name())
		return nil, ExitUsage, false
	}
	if f.format != nil && *f.format != "text" && *f.format != "json" {
		e.errorf("%s: -format %q: give text or json", f.fs.Name(), *f.format)
		return nil, ExitUsage, false
	}
	return pos, 0, true
}

// inspectSession is a connected inspect run.
type inspectSession struct {
	c     *emq.Client
	q     *emq.Queue
	ctx   context.Context
	close func()
}

// open checks the queue and whatever check checks before anything is sent,
// connects with an observing client and judges the keyspace's version
// record. A writer is refused when the record is absent or foreign; a
// reader is warned and goes on.
func open(e *env, f *inspectFlags, write bool, check func() error) (*inspectSession, int) {
	opt, err := f.conn.option()
	if err != nil {
		e.errorf("%v", err)
		return nil, ExitUsage
	}
	if err := emq.ValidateQueueName(*f.queue); err != nil {
		e.errorf("%s: %v; nothing was sent", f.fs.Name(), err)
		return nil, ExitUsage
	}
	if check != nil {
		if err := check(); err != nil {
			e.errorf("%s: %v; nothing was sent", f.fs.Name(), err)
			return nil, ExitUsage
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.conn.Timeout)
	c, err := f.conn.observe(ctx, opt)
	if err != nil {
		cancel()
		e.errorf("%v", err)
		return nil, ExitUsage
	}
	s := &inspectSession{c: c, ctx: ctx, close: func() { cancel(); c.Close() }}
	s.q, _ = c.Queue(*f.queue) // checked above
	v := c.Keyspace()
	if write {
		if err := v.Writable(); err != nil {
			e.errorf("%s: refusing to write: %v; nothing was written", f.fs.Name(), err)
			s.close()
			return nil, ExitUsage
		}
	}
	if w := warning(v); w != "" {
		e.errorf("warning: %s", w)
	}
	return s, ExitOK
}

// warning is what a reader of the keyspace should know about its version
// record, or "" when it is the SDK's version.
func warning(v emq.KeyspaceVersion) string {
	switch v.Verdict {
	case emq.VersionAbsent, emq.VersionForeign:
		return v.Writable().Error() + "; reading it with the SDK's grammar anyway"
	case emq.VersionBehind:
		return fmt.Sprintf("the keyspace's version record %q is below the SDK's %s; a client that connects raises it, this command does not", v.Record, emq.Version)
	case emq.VersionAhead:
		return fmt.Sprintf("the keyspace's version record %q is ahead of the SDK's %s; what a later minor added is not shown", v.Record, emq.Version)
	}
	return ""
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

func runInspectQueues(e *env, sub inspectSub, name string, args []string) int {
	fs := e.flags("inspect "+name, sub.synopsis+" "+connSynopsis, sub.help+"\n\n"+inspectSafety)
	var cn conn
	cn.flags(fs.FlagSet)
	format := fs.String("format", "text", "the output: text or json")
	if code, ok := fs.Parse(args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		e.errorf("inspect queues takes no arguments (got %q)", strings.Join(fs.Args(), " "))
		return ExitUsage
	}
	if *format != "text" && *format != "json" {
		e.errorf("inspect queues: -format %q: give text or json", *format)
		return ExitUsage
	}
	opt, err := cn.option()
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), cn.Timeout)
	defer cancel()
	c, err := cn.observe(ctx, opt)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	defer c.Close()
	if w := warning(c.Keyspace()); w != "" {
		e.errorf("warning: %s", w)
	}
	list, err := c.ListQueues(ctx, emq.ListOptions{})
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	sizes := make([]map[emq.Set]int64, len(list.Names))
	for i, n := range list.Names {
		q, err := c.Queue(n)
		if err == nil {
			sizes[i], err = q.Sizes(ctx)
		}
		if err != nil {
			e.errorf("queue %s: %v", n, err)
			return ExitUsage
		}
	}
	if *format == "json" {
		out := []map[string]any{}
		for i, n := range list.Names {
			m := map[string]any{"queue": n}
			var total int64
			for _, st := range emq.Sets() {
				m[string(st)] = sizes[i][st]
				total += sizes[i][st]
			}
			m["total"] = total
			out = append(out, m)
		}
		writeJSON(e.stdout, map[string]any{"queues": out, "complete": list.Complete})
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	head := "QUEUE"
	for _, st := range emq.Sets() {
		head += "\t" + strings.ToUpper(string(st))
	}
	fmt.Fprintln(tw, head+"\tTOTAL")
	for i, n := range list.Names {
		line, total := n, int64(0)
		for _, st := range emq.Sets() {
			line += "\t" + strconv.FormatInt(sizes[i][st], 10)
			total += sizes[i][st]
		}
		fmt.Fprintf(tw, "%s\t%d\n", line, total)
	}
	_ = tw.Flush()
	switch {
	case len(list.Names) == 0:
		fmt.Fprintln(e.stdout, "(no queue found)")
	case !list.Complete:
		fmt.Fprintf(e.stdout, "(incomplete: the walk stopped at its bounds; %d queue(s) shown)\n", len(list.Names))
	}
	return ExitOK
}

func runInspectSizes(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, true)
	pos, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		e.errorf("inspect sizes takes no arguments (got %q)", strings.Join(pos, " "))
		return ExitUsage
	}
	s, code := open(e, f, false, nil)
	if s == nil {
		return code
	}
	defer s.close()
	sizes, err := s.q.Sizes(s.ctx)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	rung, err := s.q.Rung(s.ctx)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	pol, err := s.q.Policy(s.ctx)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	keys := s.q.Keys()
	// Under a policy (echomq 2.7.0) the leased jobs are in the running set.
	setKey := func(st emq.Set) string {
		if st == emq.SetActive && pol.Requires > 0 {
			return keys.Running
		}
		return keys.Set(st)
	}
	if *f.format == "json" {
		var sets []map[string]any
		for _, st := range emq.Sets() {
			sets = append(sets, map[string]any{"set": st, wire.FieldState: st.State(), "key": setKey(st), "size": sizes[st]})
		}
		out := map[string]any{"queue": s.q.Name(), "sets": sets, "doorbell": map[string]any{"key": keys.Wake, "rung": rung}}
		if pol.Requires > 0 {
			out[policyWord] = policyJSON(pol)
		}
		writeJSON(e.stdout, out)
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SET\t%s\tSIZE\tKEY\n", strings.ToUpper(wire.FieldState))
	var total int64
	for _, st := range emq.Sets() {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", st, st.State(), sizes[st], setKey(st))
		total += sizes[st]
	}
	fmt.Fprintf(tw, "total\t\t%d\n", total)
	_ = tw.Flush()
	if rung {
		fmt.Fprintf(e.stdout, "doorbell: rung (%s holds the marker)\n", keys.Wake)
	} else {
		fmt.Fprintf(e.stdout, "doorbell: not rung (%s is empty)\n", keys.Wake)
	}
	if pol.Requires > 0 {
		fmt.Fprintf(e.stdout, "policy: %s\n", policyText(pol))
	}
	return ExitOK
}

// when formats a server time, and how far it is from now when now is
// known.
func when(at, now time.Time) string {
	s := at.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if now.IsZero() {
		return s
	}
	d := at.Sub(now).Round(time.Millisecond)
	if d >= 0 {
		return s + " (in " + d.String() + ")"
	}
	return s + " (" + (-d).String() + " ago)"
}

// atName names the time a scored set's score is: the lease deadline of an
// active job, the run-at of a scheduled one; "at" for any other scored
// set, "" for a set whose members score zero.
func atName(s emq.Set) string {
	switch {
	case s.Lex():
		return ""
	case s.State() == emq.StateActive:
		return "lease_deadline"
	case s.State() == emq.StateScheduled:
		return "run_at"
	}
	return "at"
}

// findSet finds a set by its name or by the state of the ids it holds.
func findSet(name string) (emq.Set, error) {
	var names []string
	for _, s := range emq.Sets() {
		if string(s) == name || string(s.State()) == name {
			return s, nil
		}
		names = append(names, string(s))
	}
	return "", fmt.Errorf("%q is not a set (the sets: %s)", name, strings.Join(names, ", "))
}

func runInspectBrowse(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, true)
	setName := f.fs.String("set", "", "the set: a set's name or the state of the ids it holds (required)")
	n := f.fs.Int("n", 20, "at most this many ids")
	cursor := f.fs.String("cursor", "", "the cursor a previous page printed (default: the first page)")
	pos, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		e.errorf("inspect browse takes no arguments (got %q)", strings.Join(pos, " "))
		return ExitUsage
	}
	if *setName == "" {
		e.errorf("inspect browse: -set is required")
		return ExitUsage
	}
	if *n < 1 {
		e.errorf("inspect browse: -n %d: give 1 or more", *n)
		return ExitUsage
	}
	var set emq.Set
	s, code := open(e, f, false, func() error {
		var err error
		if set, err = findSet(*setName); err != nil {
			return err
		}
		return emq.CheckCursor(set, emq.Cursor(*cursor))
	})
	if s == nil {
		return code
	}
	defer s.close()
	entries, next, err := s.q.PageEntries(s.ctx, set, emq.Cursor(*cursor), *n)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	at := atName(set)
	var last []*emq.FailedAttempt // the dead set's: each job's last recorded failure
	if set.State() == emq.StateDead && len(entries) > 0 {
		ids := make([]emq.ID, len(entries))
		for i, en := range entries {
			ids[i] = en.ID
		}
		histories, err := s.q.FailuresMany(s.ctx, ids)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		last = make([]*emq.FailedAttempt, len(entries))
		for i, h := range histories {
			if len(h) > 0 {
				last[i] = &h[len(h)-1]
			}
		}
	}
	if *f.format == "json" {
		out := []map[string]any{}
		for i, en := range entries {
			m := map[string]any{"id": en.ID, "exists": en.Exists}
			if en.Exists {
				m[wire.FieldState], m[wire.FieldToken] = en.State, en.Attempts
			}
			if at != "" {
				m["score"], m[at] = en.At.UnixMilli(), en.At.UTC()
			}
			if last != nil {
				m["last_failure"] = nil
				if last[i] != nil {
					m["last_failure"] = failureJSON(*last[i])
				}
			}
			out = append(out, m)
		}
		writeJSON(e.stdout, map[string]any{"queue": s.q.Name(), "set": set, "entries": out, "next": next})
		return ExitOK
	}
	now, _ := s.c.ServerTime(s.ctx) // zero when the server does not tell: times are shown without "in"
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	for i, en := range entries {
		line := en.ID.String() + "\t"
		if en.Exists {
			line += fmt.Sprintf("%s=%d\t", wire.FieldToken, en.Attempts)
		} else {
			line += wire.FieldToken + "=-\t"
		}
		if at != "" {
			line += at + "=" + when(en.At, now) + "\t"
		}
		if last != nil && en.Exists {
			if l := last[i]; l != nil {
				line += "last_failure=" + string(l.Class) + ": " + FirstLine(l.Message) + "\t"
			} else {
				line += "last_failure=(not recorded)\t"
			}
		}
		switch {
		case !en.Exists:
			line += "(no row: the id has no job)"
		case en.State != set.State():
			line += fmt.Sprintf("%s=%s (not %s)", wire.FieldState, en.State, set.State())
		}
		fmt.Fprintln(tw, strings.TrimRight(line, "\t"))
	}
	_ = tw.Flush()
	switch {
	case len(entries) == 0 && *cursor == "":
		fmt.Fprintf(e.stdout, "(%s is empty)\n", set)
	case len(entries) == 0:
		fmt.Fprintln(e.stdout, "(no more ids)")
	}
	if next != "" {
		fmt.Fprintf(e.stdout, "next: -cursor %s\n", next)
	} else {
		fmt.Fprintln(e.stdout, "(last page)")
	}
	return ExitOK
}

// Text returns a payload as text when it is safe to print on a terminal:
// valid UTF-8 without control characters (C0, DEL, C1: no newlines, tabs
// or escape sequences) and without the invisible characters that reorder
// or hide text (bidirectional controls). ok is false otherwise; show it in
// hex.
func Text(payload []byte) (string, bool) {
	if !utf8.Valid(payload) {
		return "", false
	}
	s := string(payload)
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return "", false
		}
	}
	return s, true
}

func runInspectShow(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, true)
	raw := f.fs.Bool("raw", false, "write the payload's bytes to stdout, and nothing else")
	pos, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		e.errorf("inspect show takes one id (got %d arguments)", len(pos))
		return ExitUsage
	}
	if *raw && *f.format != "text" {
		e.errorf("inspect show: -raw and -format %s: choose one", *f.format)
		return ExitUsage
	}
	var id emq.ID
	s, code := open(e, f, false, func() error {
		var err error
		id, err = emq.ParseID(pos[0])
		return err
	})
	if s == nil {
		return code
	}
	defer s.close()
	job, found, err := s.q.Get(s.ctx, id)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	in := make([]string, len(job.In))
	for i, set := range job.In {
		in[i] = string(set)
	}
	if !found && job.Completed != nil && !*raw && len(job.In) == 0 {
		now, _ := s.c.ServerTime(s.ctx)
		showCompleted(e.stdout, s.q, job, *f.format, now)
		return ExitOK
	}
	if !found {
		if len(job.In) > 0 {
			e.errorf("no job %s in queue %s: it has no row, yet %s holds it (the sets invariant is broken)", id, s.q.Name(), strings.Join(in, " and "))
		} else {
			e.errorf("no job %s in queue %s (never enqueued, or completed and retired)", id, s.q.Name())
		}
		return ExitFindings
	}
	if len(job.In) != 1 || job.In[0] != job.State.Set() {
		e.errorf("warning: the row of %s says %q but the set(s) holding it are [%s] (the sets invariant is broken, or the job moved while it was read)", id, job.State, strings.Join(in, " "))
	}
	if *raw {
		_, _ = e.stdout.Write(job.Payload)
		return ExitOK
	}
	at := ""
	if !job.At.IsZero() {
		at = atName(job.State.Set())
	}
	text, isText := Text(job.Payload)
	if *f.format == "json" {
		m := map[string]any{"id": job.ID, "queue": s.q.Name(), wire.FieldState: job.State, wire.FieldToken: job.Attempts, "in": in, "bytes": len(job.Payload)}
		if isText {
			m[wire.FieldPayload], m[wire.FieldPayload+"_encoding"] = text, "text"
		} else {
			m[wire.FieldPayload], m[wire.FieldPayload+"_encoding"] = hex.EncodeToString(job.Payload), "hex"
		}
		if at != "" {
			m["score"], m[at] = job.At.UnixMilli(), job.At.UTC()
		}
		failures := make([]map[string]any, len(job.Failures))
		for i, a := range job.Failures {
			failures[i] = failureJSON(a)
		}
		m["history"] = failures
		bytesJSON(m, outputNames[0], job.Progress)
		if job.State == emq.StateDead {
			m["died_at"] = nil // not recorded
			if !job.DiedAt.IsZero() {
				m["died_at"] = job.DiedAt.UTC()
			}
		}
		writeJSON(e.stdout, m)
		return ExitOK
	}
	now := time.Time{}
	if at != "" || len(job.Failures) > 0 {
		now, _ = s.c.ServerTime(s.ctx)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", job.ID)
	fmt.Fprintf(tw, "queue\t%s\n", s.q.Name())
	fmt.Fprintf(tw, "%s\t%s\n", wire.FieldState, job.State)
	fmt.Fprintf(tw, "%s\t%d\n", wire.FieldToken, job.Attempts)
	if at != "" {
		fmt.Fprintf(tw, "%s\t%s\n", at, when(job.At, now))
	}
	switch {
	case len(job.Payload) == 0:
		fmt.Fprintf(tw, "%s\t0 bytes\n", wire.FieldPayload)
	case isText:
		fmt.Fprintf(tw, "%s\t%d bytes, text: %s\n", wire.FieldPayload, len(job.Payload), text)
	default:
		fmt.Fprintf(tw, "%s\t%d bytes, hex: %s\n", wire.FieldPayload, len(job.Payload), hex.EncodeToString(job.Payload))
	}
	if job.State == emq.StateDead {
		if job.DiedAt.IsZero() {
			fmt.Fprintf(tw, "died_at\tnot recorded\n")
		} else {
			fmt.Fprintf(tw, "died_at\t%s\n", when(job.DiedAt, now))
		}
	}
	if len(job.Progress) > 0 {
		fmt.Fprintf(tw, "%s\t%s\n", outputNames[0], bytesLine(job.Progress))
	}
	if len(job.Failures) == 0 {
		fmt.Fprintf(tw, "history\tnone recorded\n")
	}
	_ = tw.Flush()
	if len(job.Failures) > 0 {
		fmt.Fprintf(e.stdout, "history (%d failed attempts recorded, oldest first):\n", len(job.Failures))
		ft := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(ft, "  attempt\tat\tclass\tworker\terror")
		for _, a := range job.Failures {
			worker := a.Worker
			if worker == "" {
				worker = "-"
			} else {
				worker = FirstLine(worker)
			}
			fmt.Fprintf(ft, "  %d\t%s\t%s\t%s\t%s\n", a.Attempt, when(a.At, now), FirstLine(string(a.Class)), worker, FirstLine(a.Message))
		}
		_ = ft.Flush()
	}
	return ExitOK
}

// failureJSON is a recorded failed attempt as inspect's JSON shows it.
func failureJSON(a emq.FailedAttempt) map[string]any {
	return map[string]any{"attempt": a.Attempt, "at": a.At.UTC(), "class": a.Class, "worker": a.Worker, "error": a.Message}
}

// FirstLine returns the first line of an error's text, safe to print on a
// terminal: cut at the first line break, and quoted (Go syntax, every
// control or invisible character escaped) when what is left is not Text.
// A line longer than 200 characters is cut, marked with "…".
func FirstLine(msg string) string {
	line, _, _ := strings.Cut(msg, "\n")
	line = strings.TrimSuffix(line, "\r")
	if r := []rune(line); len(r) > 200 {
		line = string(r[:200]) + "…"
	}
	if t, ok := Text([]byte(line)); ok {
		return t
	}
	return strconv.QuoteToGraphic(line)
}

// idArgs parses a writer's flags and its ids, or none with -all; the ids
// are checked by open.
func idArgs(e *env, f *inspectFlags, all *bool, args []string) ([]string, int, bool) {
	ids, code, ok := f.parse(e, args)
	if !ok {
		return nil, code, false
	}
	switch {
	case *all && len(ids) > 0:
		e.errorf("%s: give job ids or -all, not both", f.fs.Name())
		return nil, ExitUsage, false
	case !*all && len(ids) == 0:
		e.errorf("%s: give one or more job ids, or -all for every dead job", f.fs.Name())
		return nil, ExitUsage, false
	}
	return ids, 0, true
}

// bulkChunk is how many ids a bulk revive sends in one call.
const bulkChunk = 100

// deadIDs reads every id of the queue's dead set, a page at a time; a job
// buried while it reads may or may not be among them.
func deadIDs(s *inspectSession) ([]emq.ID, error) {
	var all []emq.ID
	cursor := emq.Cursor("")
	for {
		ids, next, err := s.q.Page(s.ctx, emq.SetDead, cursor, 1000)
		if err != nil {
			return nil, err
		}
		all = append(all, ids...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// parseIDs parses every id of args into ids, for open's check.
func parseIDs(args []string, ids *[]emq.ID) func() error {
	return func() error {
		for _, a := range args {
			id, err := emq.ParseID(a)
			if err != nil {
				return err
			}
			*ids = append(*ids, id)
		}
		return nil
	}
}

// notDead is the outcome of a job revive or purge left as it was.
const notDead = "it is not dead, and is left as it is"

func runInspectRevive(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, false)
	all := f.fs.Bool("all", false, "revive every job of the queue's dead set")
	dry := f.fs.Bool("dry-run", false, "print what would be revived, and change nothing")
	raw, code, ok := idArgs(e, f, all, args)
	if !ok {
		return code
	}
	var ids []emq.ID
	s, code := open(e, f, !*dry, parseIDs(raw, &ids))
	if s == nil {
		return code
	}
	defer s.close()
	if *all {
		var err error
		if ids, err = deadIDs(s); err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
	}
	if *dry {
		return dryRun(e, s, ids, "revive")
	}
	var revived []bool
	rung := false
	var err error
	for lo := 0; lo < len(ids) && err == nil; lo += bulkChunk {
		var oks []bool
		var r bool
		oks, r, err = s.q.ReviveAll(s.ctx, ids[lo:min(lo+bulkChunk, len(ids))])
		revived, rung = append(revived, oks...), rung || r
	}
	if *all && len(ids) == 0 {
		fmt.Fprintf(e.stdout, "(%s is empty: nothing to revive)\n", emq.SetDead)
	}
	for i, ok := range revived {
		if ok {
			fmt.Fprintf(e.stdout, "%s  revived\n", ids[i])
		} else {
			fmt.Fprintf(e.stdout, "%s  not revived: %s\n", ids[i], notDead)
		}
	}
	if slices.Contains(revived, true) {
		if rung {
			fmt.Fprintln(e.stdout, "doorbell  rung")
		} else {
			fmt.Fprintln(e.stdout, "doorbell  already rung")
		}
	}
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if slices.Contains(revived, false) {
		return ExitFindings
	}
	return ExitOK
}

func runInspectPurge(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, false)
	yes := f.fs.Bool("yes", false, "purge for real; without it, print what would be purged and delete nothing")
	all := f.fs.Bool("all", false, "purge every job of the queue's dead set")
	dry := f.fs.Bool("dry-run", false, "print what would be purged, delete nothing, and exit 0")
	raw, code, ok := idArgs(e, f, all, args)
	if !ok {
		return code
	}
	if *yes && *dry {
		e.errorf("inspect purge: -yes and -dry-run: choose one")
		return ExitUsage
	}
	var ids []emq.ID
	s, code := open(e, f, *yes, parseIDs(raw, &ids))
	if s == nil {
		return code
	}
	defer s.close()
	if *all {
		var err error
		if ids, err = deadIDs(s); err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		if len(ids) == 0 {
			fmt.Fprintf(e.stdout, "(%s is empty: nothing to purge)\n", emq.SetDead)
			return ExitOK
		}
	}
	if *dry {
		return dryRun(e, s, ids, "purge")
	}
	if *yes {
		all := true
		for _, id := range ids {
			ok, err := s.q.Purge(s.ctx, id)
			if err != nil {
				e.errorf("purge %s: %v", id, err)
				return ExitUsage
			}
			if ok {
				fmt.Fprintf(e.stdout, "%s  purged\n", id)
			} else {
				fmt.Fprintf(e.stdout, "%s  not purged: %s\n", id, notDead)
			}
			all = all && ok
		}
		if !all {
			return ExitFindings
		}
		return ExitOK
	}
	would := 0
	for _, id := range ids {
		job, ok, err := s.q.Get(s.ctx, id)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		switch {
		case ok && job.State == emq.StateDead && slices.Contains(job.In, emq.SetDead):
			would++
			fmt.Fprintf(e.stdout, "%s  would purge: %s, %s=%d, %d-byte payload\n", id, job.State, wire.FieldToken, job.Attempts, len(job.Payload))
		case !ok:
			fmt.Fprintf(e.stdout, "%s  would not purge: no such job\n", id)
		default:
			fmt.Fprintf(e.stdout, "%s  would not purge: it is %s, not %s\n", id, job.State, emq.StateDead)
		}
	}
	msg := "nothing was deleted; run again with -yes to purge " + strconv.Itoa(would) + " job(s)"
	if err := s.c.Keyspace().Writable(); err != nil {
		msg = "nothing was deleted; -yes would be refused: " + err.Error()
	}
	e.errorf("%s", msg)
	return ExitFindings
}

// dryRun prints what a revive or purge of ids would do, reading each job,
// and changes nothing.
func dryRun(e *env, s *inspectSession, ids []emq.ID, verb string) int {
	would := 0
	for _, id := range ids {
		job, ok, err := s.q.Get(s.ctx, id)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		switch {
		case ok && job.State == emq.StateDead && slices.Contains(job.In, emq.SetDead):
			would++
			fmt.Fprintf(e.stdout, "%s  would %s: %s, %s=%d, %d-byte payload\n", id, verb, job.State, wire.FieldToken, job.Attempts, len(job.Payload))
		case !ok:
			fmt.Fprintf(e.stdout, "%s  would not %s: no such job\n", id, verb)
		default:
			fmt.Fprintf(e.stdout, "%s  would not %s: it is %s, not %s\n", id, verb, job.State, emq.StateDead)
		}
	}
	fmt.Fprintf(e.stdout, "dry run: would %s %d job(s); nothing was changed\n", verb, would)
	return ExitOK
}
