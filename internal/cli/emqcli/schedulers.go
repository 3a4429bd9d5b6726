package emqcli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// The inspect subcommand of echomq 2.6.0: a queue's job schedulers.

const schedulersHelp = `Prints the job schedulers of queue Q: a page of them in next-slot order
(paused and ended ones last; the SDK's Queue.ListSchedulers, one read-only
list_schedulers call), or with ids the schedulers ID... in order (the SDK's
Queue.Schedulers, one read-only scheduler_entries call). For each: its
schedule (a cron expression in its time zone, or an interval from its
anchor), what it does with missed slots and its grace, whether it is paused,
its stored next slot (server clock; "due" when it is not after the server's
time of the read), the next -runs slots of its schedule from there (the
SDK's NextRuns: the runs it fires next unless a missed policy or a pause
intervenes), how many runs it fired and its last run's slot and job id, and
a preview of its payload template. A page that is full ends with the offset
of the next ("next: -offset N"), else "(last page)". Read-only. Exit 0, 1
when an ID given is no scheduler of the queue, or 2 on bad input or an
error.`

// schedNames are the elements of a scheduler's record, as the manifest
// names them: the JSON keys of a record.
var schedNames = wire.ScriptSchedulerEntries.ReplyElements()

func runInspectSchedulers(e *env, sub inspectSub, name string, args []string) int {
	f := newInspectFlags(e, name, sub, true)
	n := f.fs.Int("n", 100, fmt.Sprintf("the page's size, 1 to %d (without ids)", emq.MaxSchedulerPage))
	offset := f.fs.Int("offset", 0, "how many schedulers to pass over first (without ids)")
	runs := f.fs.Int("runs", 3, fmt.Sprintf("how many next runs to compute for each, 0 to %d", emq.MaxPlanRuns))
	ids, code, ok := f.parse(e, args)
	if !ok {
		return code
	}
	switch {
	case len(ids) == 0 && (*n < 1 || *n > emq.MaxSchedulerPage):
		e.errorf("%s: -n %d: give 1 to %d", f.fs.Name(), *n, emq.MaxSchedulerPage)
		return ExitUsage
	case *offset < 0:
		e.errorf("%s: -offset %d is negative", f.fs.Name(), *offset)
		return ExitUsage
	case *runs < 0 || *runs > emq.MaxPlanRuns:
		e.errorf("%s: -runs %d: give 0 to %d", f.fs.Name(), *runs, emq.MaxPlanRuns)
		return ExitUsage
	}
	s, code := open(e, f, false, func() error {
		for _, id := range ids {
			if id == "" || len(id) > emq.MaxSchedulerID {
				return fmt.Errorf("%w: scheduler %q: give 1 to %d bytes", emq.ErrArgument, id, emq.MaxSchedulerID)
			}
		}
		return nil
	})
	if s == nil {
		return code
	}
	defer s.close()
	var infos []emq.SchedulerInfo
	var err error
	if len(ids) > 0 {
		infos, err = s.q.Schedulers(s.ctx, ids...)
	} else {
		infos, err = s.q.ListSchedulers(s.ctx, *offset, *n)
	}
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	missing := false
	views := make([]schedView, len(infos))
	for i, info := range infos {
		v := schedView{info: info, id: info.ID}
		if len(ids) > 0 {
			v.id = ids[i]
			missing = missing || !info.Found()
		}
		if info.Found() && !info.Next.IsZero() {
			v.next, v.nextErr = emq.NextRuns(info.Schedule, info.Next, *runs)
		}
		views[i] = v
	}
	more := len(ids) == 0 && len(infos) == *n
	if *f.format == "json" {
		out := make([]map[string]any, len(views))
		for i, v := range views {
			out[i] = v.json()
		}
		if len(ids) > 0 {
			writeJSON(e.stdout, out)
		} else {
			page := map[string]any{"queue": s.q.Name(), "offset": *offset, "records": out, "next_offset": nil}
			if more {
				page["next_offset"] = *offset + len(infos)
			}
			writeJSON(e.stdout, page)
		}
	} else {
		for _, v := range views {
			v.text(e.stdout)
		}
		switch {
		case len(ids) > 0:
		case more:
			fmt.Fprintf(e.stdout, "next: -offset %d\n", *offset+len(infos))
		case len(infos) == 0 && *offset == 0:
			fmt.Fprintf(e.stdout, "no job schedulers in queue %s\n(last page)\n", s.q.Name())
		default:
			fmt.Fprintln(e.stdout, "(last page)")
		}
	}
	if missing {
		return ExitFindings
	}
	return ExitOK
}

// schedView is one scheduler as inspect shows it.
type schedView struct {
	id      string // as asked (a missing one's too)
	info    emq.SchedulerInfo
	next    []time.Time // its next runs
	nextErr error       // why they could not be computed
}

// schedule describes a schedule in words.
func schedule(s emq.Schedule) string {
	if s.Cron != "" {
		return fmt.Sprintf("cron %s in %s", strconv.Quote(s.Cron), s.TZ)
	}
	return fmt.Sprintf("every %v from %s", s.Every, s.Start.UTC().Format(timeFormat))
}

// timeFormat is how inspect prints a server time.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func (v schedView) text(w io.Writer) {
	i := v.info
	if !i.Found() {
		fmt.Fprintf(w, "%s  no such scheduler\n", strconv.Quote(v.id))
		return
	}
	fmt.Fprintln(w, strconv.Quote(i.ID))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  schedule\t%s\n", schedule(i.Schedule))
	missed := fmt.Sprintf("%s, grace %v", i.Missed, i.Grace)
	if i.Missed == emq.MissedBackfill {
		missed += fmt.Sprintf(", at most %d runs", i.Backfill)
	}
	fmt.Fprintf(tw, "  missed\t%s\n", missed)
	state := "on schedule"
	if i.Paused {
		state = "paused: it fires nothing until resumed"
	}
	fmt.Fprintf(tw, "  state\t%s\n", state)
	switch {
	case i.Next.IsZero():
		fmt.Fprintf(tw, "  next slot\tnone: the schedule has no further slot\n")
	case !i.Next.After(i.Now):
		fmt.Fprintf(tw, "  next slot\t%s, due\n", when(i.Next, i.Now))
	default:
		fmt.Fprintf(tw, "  next slot\t%s\n", when(i.Next, i.Now))
	}
	if !i.Next.IsZero() {
		switch {
		case v.nextErr != nil:
			fmt.Fprintf(tw, "  next runs\tcannot be computed: %s\n", FirstLine(v.nextErr.Error()))
		case len(v.next) == 0:
			fmt.Fprintf(tw, "  next runs\tnone\n")
		default:
			at := make([]string, len(v.next))
			for k, t := range v.next {
				at[k] = t.UTC().Format(timeFormat)
			}
			fmt.Fprintf(tw, "  next runs\t%s\n", strings.Join(at, ", "))
		}
	}
	if i.Runs == 0 {
		fmt.Fprintf(tw, "  runs\tnone yet\n")
	} else {
		fmt.Fprintf(tw, "  runs\t%d, the last of slot %s: job %s\n", i.Runs, i.LastSlot.UTC().Format(timeFormat), i.LastID)
	}
	fmt.Fprintf(tw, "  template\t%s\n", bytesLine(i.Template))
	_ = tw.Flush()
}

func (v schedView) json() map[string]any {
	i := v.info
	m := map[string]any{schedNames[0]: v.id, "found": i.Found()}
	if !i.Found() {
		return m
	}
	nextRuns := make([]int64, len(v.next))
	for k, t := range v.next {
		nextRuns[k] = t.UnixMilli()
	}
	m[schedNames[1]], m[schedNames[2]], m[schedNames[3]], m[schedNames[4]] = i.Cron, i.Every.Milliseconds(), msOrZero(i.Start), i.TZ
	if i.Cron != "" {
		m[schedNames[3]] = 0
	}
	m[schedNames[5]], m[schedNames[6]], m[schedNames[7]] = i.Missed, i.Backfill, i.Grace.Milliseconds()
	bytesJSON(m, schedNames[8], i.Template)
	m[schedNames[9]], m[schedNames[10]], m[schedNames[11]], m[schedNames[13]], m[schedNames[14]] = i.Paused, msOrZero(i.Next), msOrZero(i.LastSlot), i.Runs, msOrZero(i.Now)
	m[schedNames[12]] = ""
	if !i.LastID.IsZero() {
		m[schedNames[12]] = i.LastID.String()
	}
	m["due"] = !i.Next.IsZero() && !i.Next.After(i.Now)
	m["next_runs_ms"] = nextRuns
	if v.nextErr != nil {
		m["next_runs_error"] = v.nextErr.Error()
	}
	return m
}

// msOrZero is t in Unix milliseconds, 0 for the zero time.
func msOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
