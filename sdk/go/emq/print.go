package emq

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// previewBytes is how much of a payload String shows.
const previewBytes = 32

// timeLayout is how String shows a time: UTC, to the millisecond (the
// server's clock has no finer grain).
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// preview is a payload as String shows it: its size, and its first bytes
// quoted (cut at previewBytes, on a rune boundary, with "…").
func preview(p []byte) string {
	if len(p) == 0 {
		return "0 bytes"
	}
	head, more := p, false
	if len(p) > previewBytes {
		n := previewBytes
		for n > previewBytes-utf8.UTFMax && !utf8.RuneStart(p[n]) {
			n-- // not inside a rune
		}
		head, more = p[:n], true
	}
	s := strconv.Quote(string(head))
	if more {
		s += "…"
	}
	unit := "bytes"
	if len(p) == 1 {
		unit = "byte"
	}
	return fmt.Sprintf("%d %s %s", len(p), unit, s)
}

// stamp is t as String shows it.
func stamp(t time.Time) string { return t.UTC().Format(timeLayout) }

// String shows the job on one line: id, state, attempts, its lease deadline
// or run-at when it has one, the sets holding it when they are not the one
// its state names, and a preview of its payload:
//
//	JOB0aBcD… active attempts=1 at=2026-12-01T21:00:00.000Z payload=5 bytes "hello"
//
// A job without a row (Get's ok false) shows as "<id> no row", with the
// sets that hold its id, if any.
func (j JobInfo) String() string {
	var b strings.Builder
	b.WriteString(j.ID.String())
	if j.State == "" {
		b.WriteString(" no row")
		if len(j.In) > 0 {
			fmt.Fprintf(&b, " in=%v", j.In)
		}
		return b.String()
	}
	fmt.Fprintf(&b, " %s attempts=%d", j.State, j.Attempts)
	if !j.At.IsZero() {
		b.WriteString(" at=" + stamp(j.At))
	}
	if len(j.In) != 1 || j.In[0].State() != j.State {
		fmt.Fprintf(&b, " in=%v", j.In)
	}
	b.WriteString(" payload=" + preview(j.Payload))
	return b.String()
}

// String shows a claimed job on one line: id, token, lease deadline and a
// preview of its payload:
//
//	JOB0aBcD… token=1 deadline=2026-12-01T21:00:30.000Z payload=5 bytes "hello"
func (j Job) String() string {
	s := fmt.Sprintf("%s token=%d", j.ID, j.Token)
	if !j.Deadline.IsZero() {
		s += " deadline=" + stamp(j.Deadline)
	}
	return s + " payload=" + preview(j.Payload)
}

// String shows a page entry on one line: id, its score as a time when it
// has one, and its row's state and attempts, or "no row".
func (e Entry) String() string {
	s := e.ID.String()
	if !e.At.IsZero() {
		s += " at=" + stamp(e.At)
	}
	if !e.Exists {
		return s + " no row"
	}
	return fmt.Sprintf("%s %s attempts=%d", s, e.State, e.Attempts)
}

// String shows every total, in counter order:
//
//	enqueued=3 claimed=3 completed=2 retried=1 buried=0 stale=0 reaped=0 promoted=0 panicked=0 handed_back=0 cancelled=0
func (t *Tally) String() string {
	parts := make([]string, 0, numCounters)
	for _, c := range Counters() {
		parts = append(parts, c.String()+"="+strconv.FormatInt(t.Get(c), 10))
	}
	return strings.Join(parts, " ")
}

// String shows the record and its verdict: `"echomq:2.2.0" (current)`, or
// "absent".
func (k KeyspaceVersion) String() string {
	if k.Verdict == VersionAbsent {
		return "absent"
	}
	return fmt.Sprintf("%q (%s)", k.Record, k.Verdict)
}
