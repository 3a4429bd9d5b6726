package dashboard

import (
	"context"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/echomq/echomq/sdk/go/emq"
)

// What the pages show of echomq 2.4.0's reads: a queue's settle counters
// (the queue page) and a job's progress and kept result (the job page).

// counterMinutes are the minutes of the queue page's counters chart.
const counterMinutes = 60

// Output is a job's progress report or result as the job page shows it.
type Output struct {
	// Text is the bytes indented as JSON when they parse as JSON, as text
	// when they are printable UTF-8, as a hex dump otherwise, cut at the
	// dashboard's cap.
	Text string
	// Kind is "JSON", "text" or "hex".
	Kind string
	// Size is the size in bytes; Truncated that Text shows only the first
	// Options.PayloadCap bytes.
	Size      int
	Truncated bool
	// Masked reports that Options.Mask rewrote the bytes.
	Masked bool
}

// output renders a progress report or a result of a job of queue, masked
// as payloads are; nil when b is empty.
func (d *Dashboard) output(queue string, b []byte) *Output {
	if len(b) == 0 {
		return nil
	}
	size, masked := len(b), false
	if d.opt.Mask != nil {
		b, masked = d.opt.Mask(queue, b), true
	}
	p := renderPayload(b, d.opt.PayloadCap)
	out := &Output{Text: p.Text, Kind: "hex", Size: size, Truncated: p.Truncated, Masked: masked}
	switch {
	case p.JSON:
		out.Kind = "JSON"
	case isText(b):
		out.Kind, out.Text, out.Truncated = "text", string(b), false
		if len(b) > d.opt.PayloadCap {
			cut := b[:d.opt.PayloadCap]
			for len(cut) > 0 && !isText(cut) {
				cut = cut[:len(cut)-1]
			}
			out.Text, out.Truncated = string(cut), true
		}
	}
	return out
}

// isText reports whether b is printable UTF-8.
func isText(b []byte) bool { return utf8.Valid(b) && printable(b) }

// counterCell is one count of the queue page's totals.
type counterCell struct {
	Name string
	N    int64
}

// counterWords are the counts, as the event vocabulary names them.
var counterWords = []emq.Event{emq.EventCompleted, emq.EventFailed, emq.EventRetried, emq.EventDead}

func countsOf(c emq.SettleCounts) []int64 {
	return []int64{c.Completed, c.Failed, c.Retried, c.Dead}
}

// counters reads the queue's settle counters for the queue page: the
// totals and a chart of the last counterMinutes minutes, oldest first. A
// read that fails is logged and shown as unavailable: the rest of the page
// does not need it.
func (d *Dashboard) counters(ctx context.Context, q *emq.Queue) map[string]any {
	c, err := q.Counters(ctx, counterMinutes)
	if err != nil {
		d.opt.Logger.Warn("dashboard: reading the settle counters", "queue", q.Name(), "err", err)
		return map[string]any{"CountersErr": err.Error()}
	}
	totals := make([]counterCell, len(counterWords))
	for i, n := range countsOf(c.Totals) {
		totals[i] = counterCell{Name: string(counterWords[i]), N: n}
	}
	minutes := slices.Clone(c.Minutes)
	slices.Reverse(minutes) // oldest first
	times := make([]time.Time, len(minutes))
	ss := make([]series, len(counterWords))
	for i, w := range counterWords {
		ss[i].Name = string(w)
	}
	for i, m := range minutes {
		times[i] = m.Minute
		for j, n := range countsOf(m.SettleCounts) {
			ss[j].Values = append(ss[j].Values, float64(n))
		}
	}
	return map[string]any{
		"CounterTotals":  totals,
		"CountersChart":  svgChart("settled per minute (server counters, last 60 minutes)", times, ss, 640, 200),
		"CounterMinutes": counterMinutes,
	}
}

// outputData is what the job page shows of a job's output.
func (d *Dashboard) outputData(queue string, info emq.JobInfo, exists bool) map[string]any {
	data := map[string]any{}
	if exists {
		if p := d.output(queue, info.Progress); p != nil {
			data["Progress"] = p
		}
		return data
	}
	if c := info.Completed; c != nil {
		data["Completed"] = c
		data["Result"] = d.output(queue, c.Result)
	}
	return data
}
