package chaos

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A worker process keeps its records in an append-only file, one line per
// event, each written with a single write(2) so that a SIGKILL leaves every
// line it recorded whole. The first byte of a line says what happened:
const (
	recHello       = 'H' // H <pid>: the process started
	recStart       = 'S' // S <id> <token>: a handler started on a lease
	recEnd         = 'E' // E <id> <token> <ok|err>: the handler returned
	recCompleted   = 'C' // C <id> <token>: the completion was accepted
	recStaleDone   = 'Z' // Z <id> <token>: the completion was refused with EMQSTALE
	recStaleSettle = 'Y' // Y <id> <token>: a retry or bury was refused with EMQSTALE
	recRetried     = 'T' // T <id> <token>: the failed job was handed back to run again
	recBuried      = 'B' // B <id> <token>: the job was buried
	recFailed      = 'F' // F <id> <token>: settling failed otherwise; the worker does not know the outcome
	recLeaseLost   = 'L' // L: a lease extension was refused with EMQSTALE
	recReaped      = 'P' // P <n>: maintenance took back n expired leases
	recOther       = 'U' // U <counter> <n>: a settle count no handler can be named for
	recTally       = 'Q' // Q <counter>=<n> ...: the process's totals, at a clean exit
	recLogged      = 'W' // W <op> <class>: the SDK logged a warning or an error (op: the word after "emq: ", class: WRONGTYPE, the class word of a refusal, or other)
)

// The Go worker processes (this tree's and the old side's, testdata/oldfleet)
// end their S, E, settle and W lines with words of the form key=value:
// t=<unix µs> the line's wall time (the host's clock, which is also
// redis-server's: every process of a run is on one host), and, on S lines,
// d=<unix ms> the lease's deadline as the claim answered it (its claim
// script's TIME plus the lease). Readers that know nothing of them ignore
// them; the TypeScript and Python worker processes write none.
const (
	wordTime     = "t="
	wordDeadline = "d="
)

// stamp is the t= word of now.
func stamp() string { return wordTime + strconv.FormatInt(time.Now().UnixMicro(), 10) }

// recorder appends records to a file with one write(2) per record.
type recorder struct {
	f *os.File
}

// openRecorder opens path for appending, creating it.
func openRecorder(path string) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &recorder{f: f}, nil
}

// job records an event of one lease: kind, id, token and an optional word.
func (r *recorder) job(kind byte, id string, token int64, word string) {
	b := make([]byte, 0, 48)
	b = append(b, kind, ' ')
	b = append(b, id...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, token, 10)
	if word != "" {
		b = append(b, ' ')
		b = append(b, word...)
	}
	b = append(b, '\n')
	_, _ = r.f.Write(b)
}

// text records a line of free words.
func (r *recorder) text(kind byte, words ...string) {
	_, _ = r.f.Write([]byte(string(kind) + " " + strings.Join(words, " ") + "\n"))
}

func (r *recorder) close() error { return r.f.Close() }

// Lease is what the records say of one lease of a job (one token): whether
// a handler ran it and how its settle ended.
type Lease struct {
	Started bool
	Ended   bool // the handler returned
	OK      bool // ... with nil: the worker then completes the job
	// Outcome is the settle outcome the worker recorded: one of the record
	// kinds C, Z, Y, T, B, F; 0 when none was recorded (the process was
	// killed before it knew).
	Outcome byte
	// Twice counts records of this lease beyond the first of each kind: a
	// token delivered to two handlers, or settled twice.
	Twice int
}

// Ledger is every worker record of a run, per job and lease.
type Ledger struct {
	// Jobs maps a job id to its leases by token.
	Jobs map[string]map[int64]*Lease
	// Processes counts worker processes that recorded anything; Clean
	// those that exited cleanly (wrote their totals).
	Processes, Clean int
	// Reaped is the sum of the expired leases maintenance took back, as
	// the workers counted them; LeaseLost the extensions refused with
	// EMQSTALE.
	Reaped, LeaseLost int64
	// Tally sums the totals of the processes that exited cleanly.
	Tally map[string]int64
	// Other counts settle events no handler could be named for, by
	// counter; Malformed counts lines that did not parse.
	Other     map[string]int64
	Malformed int
	// Logged counts the warnings and errors the worker processes' SDKs
	// logged (W lines), by "<op> <class>".
	Logged map[string]int64
	// Cancelled maps each job cancel_ids cancelled to the state it was
	// cancelled from, as the run's canceller recorded it.
	Cancelled map[string]string
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{Jobs: map[string]map[int64]*Lease{}, Tally: map[string]int64{}, Other: map[string]int64{}, Cancelled: map[string]string{}, Logged: map[string]int64{}}
}

func (l *Ledger) lease(id string, token int64) *Lease {
	m := l.Jobs[id]
	if m == nil {
		m = map[int64]*Lease{}
		l.Jobs[id] = m
	}
	ls := m[token]
	if ls == nil {
		ls = &Lease{}
		m[token] = ls
	}
	return ls
}

// ReadLedger reads the record files of a run.
func ReadLedger(paths []string) (*Ledger, error) {
	l := NewLedger()
	for _, p := range paths {
		if err := l.readFile(p); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *Ledger) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	seen := false
	for sc.Scan() {
		seen = true
		l.Add(sc.Text())
	}
	if seen {
		l.Processes++
	}
	return sc.Err()
}

// Add applies one record line.
func (l *Ledger) Add(line string) {
	w := strings.Fields(line)
	if len(w) == 0 || len(w[0]) != 1 {
		l.Malformed++
		return
	}
	kind := w[0][0]
	switch kind {
	case recHello:
		return
	case recLeaseLost:
		l.LeaseLost++
		return
	case recLogged:
		if len(w) < 3 {
			l.Malformed++
			return
		}
		l.Logged[w[1]+" "+w[2]]++
		return
	case recReaped:
		if len(w) != 2 {
			l.Malformed++
			return
		}
		n, err := strconv.ParseInt(w[1], 10, 64)
		if err != nil {
			l.Malformed++
			return
		}
		l.Reaped += n
		return
	case recOther:
		if len(w) != 3 {
			l.Malformed++
			return
		}
		n, _ := strconv.ParseInt(w[2], 10, 64)
		l.Other[w[1]] += n
		return
	case recTally:
		l.Clean++
		for _, kv := range w[1:] {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				l.Malformed++
				continue
			}
			l.Tally[k] += n
		}
		return
	}
	if len(w) < 3 {
		l.Malformed++
		return
	}
	token, err := strconv.ParseInt(w[2], 10, 64)
	if err != nil {
		l.Malformed++
		return
	}
	ls := l.lease(w[1], token)
	switch kind {
	case recStart:
		if ls.Started {
			ls.Twice++
		}
		ls.Started = true
	case recEnd:
		if ls.Ended {
			ls.Twice++
		}
		ls.Ended = true
		ls.OK = len(w) > 3 && w[3] == "ok"
	case recCompleted, recStaleDone, recStaleSettle, recRetried, recBuried, recFailed:
		if ls.Outcome != 0 {
			ls.Twice++
			if kind == recCompleted || kind == recBuried {
				ls.Outcome = kind // an accepted finish outranks what was recorded before
			}
			return
		}
		ls.Outcome = kind
	default:
		l.Malformed++
	}
}

// Outcomes counts the leases by recorded settle outcome (C, Z, Y, T, B,
// F), over every job.
func (l *Ledger) Outcomes() map[byte]int64 {
	out := map[byte]int64{}
	for _, leases := range l.Jobs {
		for _, ls := range leases {
			if ls.Outcome != 0 {
				out[ls.Outcome]++
			}
		}
	}
	return out
}

// tokens returns the tokens of a job's leases, ascending.
func tokens(m map[int64]*Lease) []int64 {
	out := make([]int64, 0, len(m))
	for t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// String summarises a lease for a problem report.
func (ls *Lease) String() string {
	var b strings.Builder
	if ls.Started {
		b.WriteString("started")
	} else {
		b.WriteString("not started")
	}
	if ls.Ended {
		fmt.Fprintf(&b, ", handler %s", map[bool]string{true: "ok", false: "failed"}[ls.OK])
	}
	if ls.Outcome != 0 {
		fmt.Fprintf(&b, ", settle %c", ls.Outcome)
	}
	return b.String()
}
