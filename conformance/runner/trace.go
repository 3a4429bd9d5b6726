package runner

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
)

// A wire trace is what a testee sent the server, step by step: every
// script call (EVALSHA or EVAL, named by the bundle's script it runs) with
// its KEYS and ARGV, as the server's MONITOR feed showed them, with the
// values that differ between two runs of the same scenario normalised
// (ids a testee minted, clock readings). Options.Trace records one per
// language and compares them: Go, TypeScript and Python must send the
// same calls with the same arguments in the same order at every step.

// traceMarker starts the ECHO argument the runner sends before each step,
// so that the MONITOR feed can be cut into steps.
const traceMarker = "emqconform-trace "

// monitor reads a server's MONITOR feed on a connection of its own. A
// scenario that kills the server's normal clients (a MONITOR connection is
// one) ends the feed: the monitor connects again at once and records a
// gap, and a step with a gap is left out of the comparison.
type monitor struct {
	addr  string
	mu    sync.Mutex
	conn  net.Conn
	lines []string
	seen  chan string // the end marker, as read
	done  chan struct{}
	stop  bool
	err   error
}

// gapLine stands in the feed where the monitor connected again.
const gapLine = "\x00gap"

// dialMonitor connects to addr and starts MONITOR.
func dialMonitor(addr string) (net.Conn, *bufio.Reader, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		conn.Close()
		return nil, nil, err
	}
	r := bufio.NewReaderSize(conn, 1<<20)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	ok, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(ok, "+OK") {
		conn.Close()
		return nil, nil, fmt.Errorf("MONITOR: %q, %v", ok, err)
	}
	conn.SetReadDeadline(time.Time{})
	return conn, r, nil
}

// startMonitor connects to addr and reads its feed until finish.
func startMonitor(addr string) (*monitor, error) {
	conn, r, err := dialMonitor(addr)
	if err != nil {
		return nil, err
	}
	m := &monitor{addr: addr, conn: conn, seen: make(chan string, 1), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				m.mu.Lock()
				stop := m.stop
				m.mu.Unlock()
				if stop {
					return
				}
				if conn, r, err = dialMonitor(m.addr); err != nil {
					m.mu.Lock()
					m.err = err
					m.mu.Unlock()
					return
				}
				m.mu.Lock()
				m.conn = conn
				m.lines = append(m.lines, gapLine)
				m.mu.Unlock()
				continue
			}
			line = strings.TrimRight(strings.TrimPrefix(line, "+"), "\r\n")
			m.mu.Lock()
			m.lines = append(m.lines, line)
			m.mu.Unlock()
			if strings.Contains(line, traceMarker+"end") {
				select {
				case m.seen <- line:
				default:
				}
			}
		}
	}()
	return m, nil
}

// finish sends the end marker through s, waits until the feed has shown
// it, and returns every line read.
func (m *monitor) finish(ctx context.Context, s *server) ([]string, error) {
	defer func() {
		m.mu.Lock()
		m.stop = true
		m.conn.Close()
		m.mu.Unlock()
		<-m.done
	}()
	if err := s.do(ctx, "ECHO", traceMarker+"end").Error(); err != nil {
		return nil, err
	}
	select {
	case <-m.seen:
	case <-m.done:
		return nil, fmt.Errorf("the MONITOR feed ended: %v", m.err)
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("the MONITOR feed never showed the end marker")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.lines...), nil
}

// mark sends the marker of step n of case id.
func (s *server) mark(ctx context.Context, id string, n int) error {
	return s.do(ctx, "ECHO", traceMarker+id+" "+strconv.Itoa(n)).Error()
}

// monitorLine is one command of the feed: the client it came from (or
// "lua" for a command a script ran) and its arguments.
type monitorLine struct {
	client string
	args   []string
}

// parseMonitorLine reads `<time> [<db> <client>] "arg" "arg" ...`, the
// arguments quoted as the server's sdscatrepr writes them.
func parseMonitorLine(line string) (monitorLine, bool) {
	open := strings.IndexByte(line, '[')
	end := strings.IndexByte(line, ']')
	if open < 0 || end < open {
		return monitorLine{}, false
	}
	who := strings.Fields(line[open+1 : end])
	var ml monitorLine
	if len(who) > 1 {
		ml.client = who[1]
	}
	rest := line[end+1:]
	for i := 0; i < len(rest); i++ {
		if rest[i] != '"' {
			continue
		}
		var b strings.Builder
		i++
		for ; i < len(rest) && rest[i] != '"'; i++ {
			c := rest[i]
			if c != '\\' || i+1 >= len(rest) {
				b.WriteByte(c)
				continue
			}
			i++
			switch rest[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'x':
				if i+2 < len(rest) {
					if v, err := strconv.ParseUint(rest[i+1:i+3], 16, 8); err == nil {
						b.WriteByte(byte(v))
						i += 2
						continue
					}
				}
				b.WriteByte('x')
			default:
				b.WriteByte(rest[i])
			}
		}
		ml.args = append(ml.args, b.String())
	}
	return ml, len(ml.args) > 0
}

// tracer turns a feed into per-step script calls, normalised.
type tracer struct {
	names   map[string]string // script SHA-1 → its name
	random  map[string][]int  // script name → the ARGV positions (0-based) of its random draws
	id      *regexp.Regexp    // an id of any kind, by the manifest's canon, in either case
	reserve string            // the prefix of every reserve key
}

// randomDraw tells an argument the caller draws at random (a backoff's
// jitter, a page's spread): its summary in the manifest says so.
var randomDraw = regexp.MustCompile(`\b(at random|a random one)\b`)

// housekeeping reports whether c is a client's own upkeep rather than the
// step's: a call whose every key is a reserve key (the fence each new
// connection runs, the id minter's node lease), which a client library
// sends per connection and with node numbers and owners of its own.
func (t *tracer) housekeeping(c traceCall) bool {
	if len(c.keys) == 0 {
		return false
	}
	for _, k := range c.keys {
		if !strings.HasPrefix(k, t.reserve) {
			return false
		}
	}
	return true
}

func newTracer(p *model.Protocol) (*tracer, error) {
	b, err := bundle.Render(p)
	if err != nil {
		return nil, err
	}
	reserve, ok := p.KeyClass("reserve")
	if !ok || len(reserve.Parts) == 0 {
		return nil, fmt.Errorf("the manifest has no reserve key class")
	}
	t := &tracer{names: map[string]string{}, random: map[string][]int{}, reserve: reserve.Parts[0].Lit}
	for _, s := range b.Scripts {
		t.names[s.SHA1] = s.Name
	}
	for _, s := range p.Scripts {
		for i, a := range s.Argv {
			if a.Repeated {
				break // the fixed slots come first
			}
			if randomDraw.MatchString(a.Summary) {
				t.random[s.Name] = append(t.random[s.Name], i)
			}
		}
	}
	var kinds []string
	for _, k := range p.Kinds {
		kinds = append(kinds, regexp.QuoteMeta(k.Name))
	}
	alphabet := regexp.QuoteMeta(p.IDs.Alphabet)
	// (?i): a probe's scratch queue is named after an id, lower-cased.
	t.id = regexp.MustCompile(fmt.Sprintf(`(?i)(?:%s)[%s]{%d}`, strings.Join(kinds, "|"), alphabet, p.IDs.BodyLength))
	return t, nil
}

// traceCall is one script call of a step.
type traceCall struct {
	client string
	sha    string
	eval   bool // EVAL (the body sent), not EVALSHA
	load   bool // SCRIPT LOAD: no call, but it follows a NOSCRIPT miss
	keys   []string
	argv   []string
}

// steps cuts lines at the markers: "case step" → the step's calls, each
// as one normalised line, and the cases whose feed was cut (gaps); a NOSCRIPT miss (an EVALSHA the same client
// follows with the script's EVAL or SCRIPT LOAD) is left out, as is
// everything the runner's own connection (runner) sent.
func (t *tracer) steps(lines []string, runner map[string]bool, now int64) (out map[string][]string, gaps map[string]bool) {
	out, gaps = map[string][]string{}, map[string]bool{}
	var cur string
	var calls []traceCall
	flush := func() {
		if cur == "" {
			return
		}
		// A NOSCRIPT miss: an EVALSHA the step sends again as EVAL (the
		// body) or after a SCRIPT LOAD of the script, with the same KEYS
		// and ARGV; whichever connection the client sent the retry on.
		dropped := make([]bool, len(calls))
		for i, c := range calls {
			if !c.eval && !c.load {
				continue
			}
			for j := i - 1; j >= 0; j-- {
				d := calls[j]
				if dropped[j] || d.eval || d.load || d.sha != c.sha || (c.eval && (!slices.Equal(d.keys, c.keys) || !slices.Equal(d.argv, c.argv))) {
					continue
				}
				dropped[j] = true
				break
			}
		}
		ids := map[string]string{}
		var norm []string
		for i, c := range calls {
			if c.load || dropped[i] || t.housekeeping(c) {
				continue
			}
			name := t.names[c.sha]
			if name == "" {
				name = "script " + c.sha
			}
			argv := c.argv
			if pos := t.random[name]; len(pos) > 0 {
				argv = slices.Clone(argv)
				for _, i := range pos {
					if i < len(argv) {
						argv[i] = "<random>"
					}
				}
			}
			norm = append(norm, name+" KEYS "+t.norm(c.keys, ids, now)+" ARGV "+t.norm(argv, ids, now))
		}
		out[cur] = append(out[cur], norm...)
	}
	for _, line := range lines {
		if line == gapLine {
			if cur != "" {
				c, _ := splitStep(cur)
				gaps[c] = true
			}
			continue
		}
		ml, ok := parseMonitorLine(line)
		if !ok || ml.client == "lua" {
			continue
		}
		cmd := strings.ToUpper(ml.args[0])
		if cmd == "ECHO" && len(ml.args) == 2 && strings.HasPrefix(ml.args[1], traceMarker) {
			flush()
			cur, calls = strings.TrimPrefix(ml.args[1], traceMarker), nil
			if cur == "end" {
				cur = ""
			}
			continue
		}
		if runner[ml.client] {
			continue
		}
		switch {
		case (cmd == "EVALSHA" || cmd == "EVALSHA_RO" || cmd == "EVAL" || cmd == "EVAL_RO") && len(ml.args) >= 3:
			n, err := strconv.Atoi(ml.args[2])
			if err != nil || 3+n > len(ml.args) {
				continue
			}
			c := traceCall{client: ml.client, keys: ml.args[3 : 3+n], argv: ml.args[3+n:]}
			if strings.HasPrefix(cmd, "EVALSHA") {
				c.sha = strings.ToLower(ml.args[1])
			} else {
				sum := sha1.Sum([]byte(ml.args[1]))
				c.sha, c.eval = hex.EncodeToString(sum[:]), true
			}
			calls = append(calls, c)
		case cmd == "SCRIPT" && len(ml.args) == 3 && strings.EqualFold(ml.args[1], "LOAD"):
			sum := sha1.Sum([]byte(ml.args[2]))
			calls = append(calls, traceCall{client: ml.client, sha: hex.EncodeToString(sum[:]), load: true})
		}
	}
	flush()
	return out, gaps
}

// norm prints vals with what differs between runs replaced: each id by
// its order of first appearance in the case (<id1>, <id2>, …; ids is the
// case's numbering so far; a lower-cased id is numbered on its own), a number
// within two days of the server clock now (milliseconds), alone or as a
// stream entry id's time (with its sequence), by <clock>.
func (t *tracer) norm(vals []string, ids map[string]string, now int64) string {
	const window = 2 * 24 * 3600 * 1000
	parts := make([]string, len(vals))
	for i, v := range vals {
		v = t.id.ReplaceAllStringFunc(v, func(id string) string {
			n, ok := ids[id]
			if !ok {
				n = "<id" + strconv.Itoa(len(ids)+1) + ">"
				ids[id] = n
			}
			return n
		})
		ms, seq, stream := strings.Cut(v, "-") // a stream entry id: <ms>-<seq>
		if n, err := strconv.ParseInt(ms, 10, 64); err == nil && n > now-window && n < now+window {
			if _, err := strconv.ParseUint(seq, 10, 64); !stream || err == nil {
				v = "<clock>" // a stream id's sequence too: two entries in one millisecond or not is timing
			}
		}
		parts[i] = strconv.Quote(v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TraceDiff is a step at which a language's wire trace differs from the
// first language's.
type TraceDiff struct {
	Case     string   `json:"case"`
	Step     int      `json:"step"`
	Language string   `json:"language"`
	Want     []string `json:"want"` // the first language's calls
	Got      []string `json:"got"`
	Against  string   `json:"against"` // the first language
}

func (d TraceDiff) String() string {
	return fmt.Sprintf("%s step %d: %s sent %d script call(s), %s sent %d:\n      %s: %s\n      %s: %s",
		d.Case, d.Step, d.Against, len(d.Want), d.Language, len(d.Got), d.Against, strings.Join(d.Want, "\n        "), d.Language, strings.Join(d.Got, "\n        "))
}

// compareTraces compares every result's trace with the first one's, step
// by step, in case order.
func compareTraces(results []*Result) []TraceDiff {
	if len(results) < 2 {
		return nil
	}
	ref := results[0]
	var diffs []TraceDiff
	for _, r := range results[1:] {
		keys := map[string]bool{}
		for k := range ref.trace {
			keys[k] = true
		}
		for k := range r.trace {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Slice(sorted, func(i, j int) bool {
			ci, si := splitStep(sorted[i])
			cj, sj := splitStep(sorted[j])
			if ci != cj {
				return ci < cj
			}
			return si < sj
		})
		for _, k := range sorted {
			want, got := ref.trace[k], r.trace[k]
			c, _ := splitStep(k)
			if ref.traceGaps[c] || r.traceGaps[c] {
				continue // the feed was cut in this case: its steps' markers may be lost with it
			}
			if strings.Join(want, "\n") == strings.Join(got, "\n") {
				continue
			}
			_, s := splitStep(k)
			diffs = append(diffs, TraceDiff{Case: c, Step: s, Language: r.Language, Against: ref.Language, Want: want, Got: got})
		}
	}
	return diffs
}

func splitStep(k string) (string, int) {
	i := strings.LastIndexByte(k, ' ')
	n, _ := strconv.Atoi(k[i+1:])
	return k[:i], n
}
