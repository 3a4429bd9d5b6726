package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"

	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/inspect"
	"github.com/echomq/echomq/gen/live"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/internal/cmdflag"
)

// inspectSub is one subcommand of inspect.
type inspectSub struct {
	synopsis string
	summary  string
	help     string
	run      func(e *env, sub inspectSub, name string, args []string) int
}

func inspectSubs() map[string]inspectSub {
	return map[string]inspectSub{
		"sizes": {"-queue Q [-format text|json]", "the size of every set of a queue, and whether its doorbell is rung",
			`Prints the size of every set of queue Q (ZCARD), in manifest order with its
key, and whether the queue's doorbell is rung (the marker idle workers wait
for is there). Read-only. Exit 0, or 2 on bad input or an error.`, runInspectSizes},
		"browse": {"-queue Q -set S [-n N] [-cursor C] [-format text|json]", "a page of a set, newest first",
			`Prints up to N ids of set S of queue Q, newest first, one per line with its
attempts and, in a scored set, the time its score is (the lease deadline of
an active job, the run-at of a scheduled one, server clock), then the cursor
of the next page ("next: -cursor C") or "(last page)". S is a set's name or
the state of the ids it holds.

Cursors are the SDK's Queue.Page cursors and pages are its pages: an id for a
set whose members all score zero (newest first is reverse mint order),
"score/id" for a scored set (latest first, ties by id). An id never shows
twice across pages, and an id present throughout is never skipped, however
the set changes between pages. Read-only. Exit 0, or 2 on bad input or an
error.`, runInspectBrowse},
		"show": {"-queue Q [-format text|json | -raw] ID", "one job: state, attempts, payload, lease deadline or run-at",
			`Prints job ID of queue Q: its state, attempts, payload, and the lease
deadline of an active job or the run-at of a scheduled one (server clock).
The payload is printed as text when it is valid UTF-8 without control or
bidirectional-control characters, and in hex otherwise; -raw writes its
bytes to stdout exactly, and nothing else. A job whose row and sets disagree
(the sets invariant) is shown with a warning. Read-only. Exit 0, 1 when the
job does not exist, 2 on bad input or an error.`, runInspectShow},
		"revive": {"-queue Q ID...", "move dead jobs back to pending and ring the doorbell",
			`Runs the manifest's revive script on each dead job ID of queue Q (it goes
back to pending, its attempts kept), then, when one was revived, rings the
queue's doorbell with the ring script so that an idle worker wakes. Prints
each outcome as the script's reply name. Exit 0 when every job was revived,
1 when one was not dead (it is left as it is), 2 on bad input, a keyspace it
refuses to write, or an error.`, runInspectRevive},
		"purge": {"-queue Q [-yes] ID...", "delete dead jobs for good (needs -yes)",
			`Without -yes, reads each job ID of queue Q and prints what purge would
delete, deletes nothing, and exits 1. With -yes, runs the manifest's purge
script on each: a dead job's row and id are deleted for good, any other job
is left as it is. Prints each outcome as the script's reply name. Exit 0 when
every job was purged, 1 when one was not dead (or without -yes), 2 on bad
input, a keyspace it refuses to write, or an error.`, runInspectPurge},
	}
}

var inspectSafety = strings.ReplaceAll(`The queue name, the ids, the set and the cursor are checked against the
manifest's grammar (queue pattern, id canon) before anything is sent; a
malformed one exits 2 without connecting. Everything is derived from the
manifest: keys, row fields, scripts.

The keyspace's version record is only read: the fence script never runs,
and neither the record nor the bundle identity is written. revive and purge
-yes refuse (exit 2) to write a keyspace whose record is absent (no client
has fenced it) or of another major or protocol than the manifest's; the
read-only subcommands warn on stderr and proceed.

Connects like emqgen probe; the password may come from $PASSWORDENV.
The user needs GET on the version record, and on the queue's keys ZCARD,
EXISTS, ZRANGE, ZSCORE, HGETALL, HMGET and TIME to read, EVALSHA and EVAL
(and what the scripts call) to revive and purge.`, "PASSWORDENV", live.PasswordEnv)

func runInspect(e *env, args []string) int {
	subs := inspectSubs()
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		w := e.stderr
		fmt.Fprintln(w, "Usage: emqgen inspect <subcommand> -queue Q [flags] [args]")
		fmt.Fprintln(w, "\nReads one queue of a live keyspace, and revives or purges its dead jobs, from\nthe manifest alone (never from generated code).\n\nSubcommands:")
		var names []string
		for n := range subs {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return inspectOrder(names[i]) < inspectOrder(names[j]) })
		for _, n := range names {
			fmt.Fprintf(w, "  %-7s %s\n", n, subs[n].summary)
		}
		fmt.Fprintln(w, "\nRun emqgen inspect <subcommand> -h for its flags.")
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	sub, ok := subs[args[0]]
	if !ok {
		e.errorf("inspect: unknown subcommand %q (run emqgen inspect -h)", args[0])
		return ExitUsage
	}
	return sub.run(e, sub, args[0], args[1:])
}

// inspectOrder lists the subcommands readers first.
func inspectOrder(name string) int {
	return strings.Index("sizes browse show revive purge", name)
}

// inspectFlags is what every inspect subcommand takes.
type inspectFlags struct {
	fs     *cmdflag.FlagSet
	conn   live.Conn
	file   *string
	queue  *string
	format *string // nil for subcommands without -format
}

func (e *env) inspectFlags(name string, sub inspectSub, formats bool) *inspectFlags {
	help := sub.help + "\n\n" + inspectSafety
	f := &inspectFlags{fs: e.flags("inspect "+name, sub.synopsis+" [-addr HOST:PORT] [-user NAME] [-password PASS] [-tls [-tls-ca FILE] [-tls-server-name NAME]] [-manifest FILE] [-timeout D]", help)}
	f.file = f.fs.String("manifest", "protocol.yaml", "the manifest whose grammar and scripts to use")
	f.conn.Flags(f.fs.FlagSet)
	f.queue = f.fs.String("queue", "", "the queue (required)")
	if formats {
		f.format = f.fs.String("format", "text", "the output: text or json")
	}
	return f
}

// parse parses flags anywhere among the arguments (show -queue Q ID and
// show ID -queue Q alike: no queue name or id begins with a dash) and
// returns the arguments. It checks -queue and -format.
func (f *inspectFlags) parse(e *env, args []string) ([]string, int, bool) {
	if code, ok := parse(f.fs, args); !ok {
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
	in      *inspect.Inspector
	rc      rueidis.Client
	ctx     context.Context
	queue   string
	version inspect.Version
	verErr  error // the version record could not be read
	close   func()
}

// open loads the manifest, checks the queue and whatever check checks
// against it before anything is sent, connects and reads the keyspace's
// version record. A writer is refused when the record is absent or of
// another major; a reader is warned and goes on.
func (e *env) open(f *inspectFlags, write bool, check func(in *inspect.Inspector) error) (*inspectSession, int) {
	opt, err := f.conn.Option()
	if err != nil {
		e.errorf("%v", err)
		return nil, ExitUsage
	}
	p, code := e.load(*f.file)
	if p == nil {
		return nil, code
	}
	in, err := inspect.New(p)
	if err != nil {
		e.errorf("%v", err)
		return nil, ExitUsage
	}
	if err := in.CheckQueue(*f.queue); err != nil {
		e.errorf("%s: %v; nothing was sent", f.fs.Name(), err)
		return nil, ExitUsage
	}
	if check != nil {
		if err := check(in); err != nil {
			e.errorf("%s: %v; nothing was sent", f.fs.Name(), err)
			return nil, ExitUsage
		}
	}
	rc, err := f.conn.Dial(opt)
	if err != nil {
		e.errorf("%v", err)
		return nil, ExitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.conn.Timeout)
	s := &inspectSession{in: in, rc: rc, ctx: ctx, queue: *f.queue, close: func() { cancel(); rc.Close() }}
	s.version, err = in.Version(ctx, rc)
	switch {
	case err != nil && write:
		e.errorf("%s: refusing to write: %v", f.fs.Name(), err)
		s.close()
		return nil, ExitUsage
	case err != nil:
		s.verErr = err
		e.errorf("warning: %v; reading anyway", err)
	case write:
		if werr := s.version.Writable(); werr != nil {
			e.errorf("%s: refusing to write: %v; nothing was written", f.fs.Name(), werr)
			s.close()
			return nil, ExitUsage
		}
		fallthrough
	default:
		if w := s.version.Warning(); w != "" {
			e.errorf("warning: %s", w)
		}
	}
	return s, ExitOK
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	fmt.Fprintf(w, "%s\n", b)
}

func runInspectSizes(e *env, sub inspectSub, name string, args []string) int {
	f := e.inspectFlags(name, sub, true)
	pos, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		e.errorf("inspect sizes takes no arguments (got %q)", strings.Join(pos, " "))
		return ExitUsage
	}
	s, code := e.open(f, false, nil)
	if s == nil {
		return code
	}
	defer s.close()
	sz, err := s.in.Sizes(s.ctx, s.rc, s.queue)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	stateName := s.in.Field(model.RoleState).Name
	if *f.format == "json" {
		var sets []map[string]any
		for _, st := range sz.Sets {
			sets = append(sets, map[string]any{"set": st.Name, stateName: st.State, "key": st.Key, "size": st.Size})
		}
		out := map[string]any{"queue": sz.Queue, "sets": sets}
		if sz.Doorbell != nil {
			out["doorbell"] = map[string]any{"key": sz.Doorbell.Key, "rung": sz.Doorbell.Rung}
		}
		writeJSON(e.stdout, out)
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SET\t%s\tSIZE\tKEY\n", strings.ToUpper(stateName))
	var total int64
	for _, st := range sz.Sets {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", st.Name, st.State, st.Size, st.Key)
		total += st.Size
	}
	fmt.Fprintf(tw, "total\t\t%d\n", total)
	_ = tw.Flush()
	if d := sz.Doorbell; d != nil {
		if d.Rung {
			fmt.Fprintf(e.stdout, "doorbell: rung (%s holds the marker)\n", d.Key)
		} else {
			fmt.Fprintf(e.stdout, "doorbell: not rung (%s is empty)\n", d.Key)
		}
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

func runInspectBrowse(e *env, sub inspectSub, name string, args []string) int {
	f := e.inspectFlags(name, sub, true)
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
	var set inspect.Set
	s, code := e.open(f, false, func(in *inspect.Inspector) error {
		var err error
		if set, err = in.Set(*setName); err != nil {
			return err
		}
		return in.CheckCursor(set, *cursor)
	})
	if s == nil {
		return code
	}
	defer s.close()
	page, err := s.in.Page(s.ctx, s.rc, s.queue, set, *cursor, *n)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	state := s.in.Field(model.RoleState).Name
	token := s.in.Field(model.RoleToken).Name
	if *f.format == "json" {
		entries := []map[string]any{}
		for _, en := range page.Entries {
			m := map[string]any{"id": en.ID, "exists": en.Row}
			if en.Row {
				m[state], m[token] = en.State, en.Attempts
			}
			if !set.Lex {
				m["score"], m[set.AtName()] = en.Score, en.At.UTC()
			}
			entries = append(entries, m)
		}
		writeJSON(e.stdout, map[string]any{"queue": s.queue, "set": set.Name, "entries": entries, "next": page.Next})
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	for _, en := range page.Entries {
		line := en.ID + "\t"
		if en.Row {
			line += fmt.Sprintf("%s=%d\t", token, en.Attempts)
		} else {
			line += token + "=-\t"
		}
		if !set.Lex {
			line += set.AtName() + "=" + when(en.At, page.Now) + "\t"
		}
		switch {
		case !en.Row:
			line += "(no row: the id has no job)"
		case en.State != set.State:
			line += fmt.Sprintf("%s=%s (not %s)", state, en.State, set.State)
		}
		fmt.Fprintln(tw, strings.TrimRight(line, "\t"))
	}
	_ = tw.Flush()
	switch {
	case len(page.Entries) == 0 && *cursor == "":
		fmt.Fprintf(e.stdout, "(%s is empty)\n", set.Name)
	case len(page.Entries) == 0:
		fmt.Fprintln(e.stdout, "(no more ids)")
	}
	if page.Next != "" {
		fmt.Fprintf(e.stdout, "next: -cursor %s\n", page.Next)
	} else {
		fmt.Fprintln(e.stdout, "(last page)")
	}
	return ExitOK
}

func runInspectShow(e *env, sub inspectSub, name string, args []string) int {
	f := e.inspectFlags(name, sub, true)
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
	id := pos[0]
	s, code := e.open(f, false, func(in *inspect.Inspector) error { return in.CheckID(id) })
	if s == nil {
		return code
	}
	defer s.close()
	job, found, err := s.in.Get(s.ctx, s.rc, s.queue, id)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if !found {
		if len(job.In) > 0 {
			e.errorf("no job %s in queue %s: it has no row, yet %s holds it (the sets invariant is broken)", id, s.queue, strings.Join(job.In, " and "))
		} else {
			e.errorf("no job %s in queue %s (never enqueued, or completed and retired)", id, s.queue)
		}
		return ExitFindings
	}
	if st, ok := s.in.Protocol().State(job.State); !ok || len(job.In) != 1 || job.In[0] != st.Set {
		e.errorf("warning: the row of %s says %q but the set(s) holding it are [%s] (the sets invariant is broken, or the job moved while it was read)", id, job.State, strings.Join(job.In, " "))
	}
	if *raw {
		_, _ = e.stdout.Write(job.Payload)
		return ExitOK
	}
	state := s.in.Field(model.RoleState).Name
	token := s.in.Field(model.RoleToken).Name
	payload := s.in.Field(model.RolePayload).Name
	text, isText := inspect.Text(job.Payload)
	if *f.format == "json" {
		m := map[string]any{"id": job.ID, "queue": job.Queue, state: job.State, token: job.Attempts, "in": job.In, "bytes": len(job.Payload)}
		if isText {
			m[payload], m[payload+"_encoding"] = text, "text"
		} else {
			m[payload], m[payload+"_encoding"] = hex.EncodeToString(job.Payload), "hex"
		}
		if job.AtName != "" {
			m["score"], m[job.AtName] = job.Score, job.At.UTC()
		}
		writeJSON(e.stdout, m)
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", job.ID)
	fmt.Fprintf(tw, "queue\t%s\n", job.Queue)
	fmt.Fprintf(tw, "%s\t%s\n", state, job.State)
	fmt.Fprintf(tw, "%s\t%d\n", token, job.Attempts)
	if job.AtName != "" {
		fmt.Fprintf(tw, "%s\t%s\n", job.AtName, when(job.At, job.Now))
	}
	switch {
	case len(job.Payload) == 0:
		fmt.Fprintf(tw, "%s\t0 bytes\n", payload)
	case isText:
		fmt.Fprintf(tw, "%s\t%d bytes, text: %s\n", payload, len(job.Payload), text)
	default:
		fmt.Fprintf(tw, "%s\t%d bytes, hex: %s\n", payload, len(job.Payload), hex.EncodeToString(job.Payload))
	}
	_ = tw.Flush()
	return ExitOK
}

// outcomes prints one line per outcome and reports whether every one was
// done.
func outcomes(w io.Writer, outs []inspect.Outcome) bool {
	all := true
	for _, o := range outs {
		all = all && o.Done
		if o.Summary != "" {
			fmt.Fprintf(w, "%s  %s: %s\n", o.ID, o.Name, o.Summary)
		} else {
			fmt.Fprintf(w, "%s  %s\n", o.ID, o.Name)
		}
	}
	return all
}

// idArgs parses a writer's flags and its ids.
func (e *env) idArgs(f *inspectFlags, args []string) ([]string, int, bool) {
	ids, code, ok := f.parse(e, args)
	if !ok {
		return nil, code, false
	}
	if len(ids) == 0 {
		e.errorf("%s: give one or more job ids", f.fs.Name())
		return nil, ExitUsage, false
	}
	return ids, 0, true
}

func checkIDs(ids []string) func(in *inspect.Inspector) error {
	return func(in *inspect.Inspector) error {
		for _, id := range ids {
			if err := in.CheckID(id); err != nil {
				return err
			}
		}
		return nil
	}
}

func runInspectRevive(e *env, sub inspectSub, name string, args []string) int {
	f := e.inspectFlags(name, sub, false)
	ids, code, ok := e.idArgs(f, args)
	if !ok {
		return code
	}
	s, code := e.open(f, true, checkIDs(ids))
	if s == nil {
		return code
	}
	defer s.close()
	outs, ring, err := s.in.Revive(s.ctx, s.rc, s.queue, ids)
	all := outcomes(e.stdout, outs)
	if ring != nil {
		fmt.Fprintf(e.stdout, "doorbell  %s\n", ring.Name)
	}
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if !all {
		return ExitFindings
	}
	return ExitOK
}

func runInspectPurge(e *env, sub inspectSub, name string, args []string) int {
	f := e.inspectFlags(name, sub, false)
	yes := f.fs.Bool("yes", false, "purge for real; without it, print what would be purged and delete nothing")
	ids, code, ok := e.idArgs(f, args)
	if !ok {
		return code
	}
	s, code := e.open(f, *yes, checkIDs(ids))
	if s == nil {
		return code
	}
	defer s.close()
	if *yes {
		outs, err := s.in.Purge(s.ctx, s.rc, s.queue, ids)
		all := outcomes(e.stdout, outs)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		if !all {
			return ExitFindings
		}
		return ExitOK
	}
	pvs, err := s.in.PurgePreview(s.ctx, s.rc, s.queue, ids)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	token := s.in.Field(model.RoleToken).Name
	would := 0
	for _, pv := range pvs {
		switch {
		case pv.Would:
			would++
			fmt.Fprintf(e.stdout, "%s  would purge: %s, %s=%d, %d-byte payload\n", pv.ID, pv.State, token, pv.Attempts, len(pv.Payload))
		case !pv.Row:
			fmt.Fprintf(e.stdout, "%s  would not purge: no such job\n", pv.ID)
		default:
			fmt.Fprintf(e.stdout, "%s  would not purge: it is %s, not %s\n", pv.ID, pv.State, pv.From)
		}
	}
	msg := "nothing was deleted; run again with -yes to purge " + strconv.Itoa(would) + " job(s)"
	if s.verErr != nil {
		msg = "nothing was deleted; -yes would be refused: " + s.verErr.Error()
	} else if err := s.version.Writable(); err != nil {
		msg = "nothing was deleted; -yes would be refused: " + err.Error()
	}
	e.errorf("%s", msg)
	return ExitFindings
}
