package emqcli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// What inspect shows of echomq 2.4.0's reads: a job's progress and
// completion record (show), a queue's settle counters (counters).

// The names of the output script's reply elements, which show's JSON
// takes for its fields: progress, completed_at_ms, attempt, result.
var outputNames = wire.ScriptOutput.ReplyElements()

// previewBytes bounds what show prints of a progress report or a result.
const previewBytes = 200

// Preview renders bytes for a terminal, bounded to n bytes: as text when
// they are Text, in hex otherwise, with "…" when cut. encoding is "text"
// or "hex"; cut tells whether it was cut.
func Preview(b []byte, n int) (s, encoding string, cut bool) {
	if len(b) > n {
		b, cut = b[:n], true
		// Cut text at a rune's start: a rune cut in two would turn it
		// into hex.
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
			b = b[:len(b)-1]
		}
	}
	if t, ok := Text(b); ok {
		s, encoding = t, "text"
	} else {
		s, encoding = hex.EncodeToString(b), "hex"
	}
	if cut {
		s += "…"
	}
	return s, encoding, cut
}

// bytesLine is a progress report or a result as show's text prints it.
func bytesLine(b []byte) string {
	if len(b) == 0 {
		return "0 bytes"
	}
	s, enc, _ := Preview(b, previewBytes)
	return fmt.Sprintf("%d bytes, %s: %s", len(b), enc, s)
}

// bytesJSON puts a bounded preview of b into m under name, with its
// encoding, its length and whether it was cut.
func bytesJSON(m map[string]any, name string, b []byte) {
	s, enc, cut := Preview(b, previewBytes)
	m[name], m[name+"_encoding"], m[name+"_bytes"], m[name+"_truncated"] = s, enc, len(b), cut
}

// completionJSON is a completion record as show's JSON shows it.
func completionJSON(c *emq.CompletionRecord) map[string]any {
	m := map[string]any{"at": c.At.UTC(), outputNames[2]: c.Attempt}
	bytesJSON(m, outputNames[3], c.Result)
	return m
}

// showCompleted prints a job whose row is gone and whose completion was
// kept.
func showCompleted(w io.Writer, q *emq.Queue, job emq.JobInfo, format string, now time.Time) {
	c := job.Completed
	if format == "json" {
		writeJSON(w, map[string]any{"id": job.ID, "queue": q.Name(), "found": false, "completed": completionJSON(c)})
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id\t%s\n", job.ID)
	fmt.Fprintf(tw, "queue\t%s\n", q.Name())
	fmt.Fprintf(tw, "completed\t%s (the row is retired; its completion record was kept)\n", when(c.At, now))
	fmt.Fprintf(tw, "%s\t%d\n", outputNames[2], c.Attempt)
	fmt.Fprintf(tw, "%s\t%s\n", outputNames[3], bytesLine(c.Result))
	_ = tw.Flush()
}

var countersHelp = `Prints the settle counters of queue Q (the SDK's Queue.Counters, echomq
2.4.0): the totals since the queue's first count, then the last N minutes of
server time (default 10, at most 1440), the current minute first, each with
how many jobs were completed, attempts failed, attempts retried and jobs
buried (dead) in it. A minute nothing was counted in shows zeros. What a 2.3
client settles is not counted. Read-only. Exit 0, or 2 on bad input or an
error.`

func runInspectCounters(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, true)
	minutes := f.fs.Int("minutes", 10, "how many minutes back from the current one (0 to 1440)")
	pos, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		e.errorf("inspect counters takes no arguments (got %q)", strings.Join(pos, " "))
		return ExitUsage
	}
	s, code := open(e, f, false, func() error {
		if *minutes < 0 || *minutes > emq.MaxCounterMinutes {
			return fmt.Errorf("-minutes %d: give 0 to %d", *minutes, emq.MaxCounterMinutes)
		}
		return nil
	})
	if s == nil {
		return code
	}
	defer s.close()
	c, err := s.q.Counters(s.ctx, *minutes)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	words := []emq.Event{emq.EventCompleted, emq.EventFailed, emq.EventRetried, emq.EventDead}
	counts := func(x emq.SettleCounts) []int64 { return []int64{x.Completed, x.Failed, x.Retried, x.Dead} }
	if *f.format == "json" {
		obj := func(x emq.SettleCounts) map[string]any {
			m := map[string]any{}
			for i, n := range counts(x) {
				m[string(words[i])] = n
			}
			return m
		}
		ms := make([]map[string]any, len(c.Minutes))
		for i, m := range c.Minutes {
			ms[i] = obj(m.SettleCounts)
			ms[i]["minute"] = m.Minute.UTC()
		}
		writeJSON(e.stdout, map[string]any{"queue": s.q.Name(), "totals": obj(c.Totals), "minutes": ms})
		return ExitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "MINUTE (UTC)\t"
	for _, w := range words {
		head += strings.ToUpper(string(w)) + "\t"
	}
	fmt.Fprintln(tw, head)
	row := func(label string, x emq.SettleCounts) {
		line := label + "\t"
		for _, n := range counts(x) {
			line += fmt.Sprint(n) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	row("total", c.Totals)
	for _, m := range c.Minutes {
		row(m.Minute.UTC().Format("2006-01-02 15:04"), m.SettleCounts)
	}
	_ = tw.Flush()
	return ExitOK
}

// followContext is the context events -follow listens until: until SIGINT
// or SIGTERM. Tests replace it.
var followContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

var eventsHelp = `Prints the events of queue Q (the SDK's Queue.EventsPage, echomq 2.4.0),
oldest first: up to N (default 100, at most 1000) after the stream id C
(-after; default: from the oldest the stream keeps), one per line with its
stream id, what happened (completed, failed, retried, dead, revived,
progress, or a later minor's word), the job, its attempt and what the event
carries (a failure's class and error, a retry's run-at, a progress report),
then the stream id to resume after ("next: -after C") or "(no more events)".
With -follow it listens instead (the SDK's Queue.Events: it waits on the
stream with XREAD BLOCK when it has read everything) and prints each event
as it comes until interrupted, or until it printed N when -n is given.
-format json prints an object with the events and next (one object a line
with -follow). The stream keeps each writer's last events only; what a 2.3
client settles writes none. Read-only. Exit 0, or 2 on bad input or an
error.`

func runInspectEvents(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, true)
	after := f.fs.String("after", "", "the stream id to read after (ms-seq); default: from the oldest kept")
	n := f.fs.Int("n", 0, "how many events: a page's size (default 100), or with -follow the number to print before exiting (default: until interrupted)")
	follow := f.fs.Bool("follow", false, "listen for events as they come")
	pos, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		e.errorf("inspect events takes no arguments (got %q)", strings.Join(pos, " "))
		return ExitUsage
	}
	page := *n
	if page == 0 {
		page = 100
	}
	s, code := open(e, f, false, func() error {
		if *n < 0 {
			return fmt.Errorf("-n %d: give a positive count", *n)
		}
		if !*follow && page > emq.MaxEventsPage {
			return fmt.Errorf("-n %d: give 1 to %d", page, emq.MaxEventsPage)
		}
		return checkAfter(*after)
	})
	if s == nil {
		return code
	}
	defer s.close()
	now, _ := s.c.ServerTime(s.ctx)
	if !*follow {
		evs, err := s.q.EventsPage(s.ctx, emq.StreamID(*after), page)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		next := *after
		if len(evs) > 0 {
			next = string(evs[len(evs)-1].StreamID)
		}
		if *f.format == "json" {
			out := make([]map[string]any, len(evs))
			for i, ev := range evs {
				out[i] = eventJSON(ev)
			}
			writeJSON(e.stdout, map[string]any{"queue": s.q.Name(), wire.ScriptEvents.Name: out, "next": next})
			return ExitOK
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, ev := range evs {
			fmt.Fprintln(tw, eventLine(ev, now))
		}
		_ = tw.Flush()
		if len(evs) < page {
			fmt.Fprintln(e.stdout, "(no more events)")
		}
		if next != "" {
			fmt.Fprintf(e.stdout, "next: -after %s\n", next)
		}
		return ExitOK
	}
	ctx, cancel := followContext()
	defer cancel()
	printed := 0
	err := s.q.Events(ctx, emq.StreamID(*after), func(_ context.Context, ev emq.JobEvent) error {
		if *f.format == "json" {
			b, _ := json.Marshal(eventJSON(ev))
			fmt.Fprintf(e.stdout, "%s\n", b)
		} else {
			fmt.Fprintln(e.stdout, strings.ReplaceAll(eventLine(ev, time.Time{}), "\t", "  "))
		}
		printed++
		if *n > 0 && printed >= *n {
			cancel()
		}
		return nil
	}, emq.EventsPageSize(min(page, emq.MaxEventsPage)))
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	return ExitOK
}

// checkAfter refuses, before anything is sent, an -after that is not a
// stream id, as EventsPage would.
func checkAfter(after string) error {
	if after == "" {
		return nil
	}
	ms, seq, ok := strings.Cut(after, "-")
	if !ok || ms == "" || seq == "" || strings.Trim(ms, "0123456789") != "" || strings.Trim(seq, "0123456789") != "" {
		return fmt.Errorf("-after %q is not a stream id (ms-seq)", after)
	}
	return nil
}

// eventLine is one event as events prints it, its columns tab-separated.
func eventLine(ev emq.JobEvent, now time.Time) string {
	line := fmt.Sprintf("%s\t%s\t%s\t%s %d", ev.StreamID, FirstLine(string(ev.Event)), ev.ID, outputNames[2], ev.Attempt)
	var more []string
	if ev.Class != "" {
		more = append(more, "class "+FirstLine(string(ev.Class)))
	}
	if ev.Error != "" {
		more = append(more, "error: "+FirstLine(ev.Error))
	}
	if !ev.RunAt.IsZero() {
		more = append(more, "run at "+when(ev.RunAt, now))
	}
	if len(ev.Progress) > 0 {
		p, _, _ := Preview(ev.Progress, previewBytes)
		more = append(more, outputNames[0]+": "+p)
	}
	return line + "\t" + strings.Join(more, ", ")
}

// eventJSON is one event as events -format json prints it.
func eventJSON(ev emq.JobEvent) map[string]any {
	el := wire.ScriptEvents.ReplyElements() // stream_id, event, id, attempt, class, error, run_at_ms, progress
	m := map[string]any{el[0]: ev.StreamID, el[1]: ev.Event, el[2]: ev.ID, el[3]: ev.Attempt, el[4]: ev.Class, el[5]: ev.Error}
	if !ev.RunAt.IsZero() {
		m["run_at"] = ev.RunAt.UTC()
	}
	if len(ev.Progress) > 0 {
		bytesJSON(m, el[7], ev.Progress)
	}
	return m
}
