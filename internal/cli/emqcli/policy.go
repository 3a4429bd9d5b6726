package emqcli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// policyWord names the command and the policy in the json outputs: the
// policy key type's name, the last part of a queue's policy key
// (wire.QueueKeys.Policy).
var policyWord = func() string {
	k, _ := wire.NewQueueKeys("a")
	return k.Policy[strings.LastIndexByte(k.Policy, ':')+1:]
}()

const policySynopsis = "[-format text|json] [-force] QUEUE [pause | resume | concurrency N | rate N/PERIOD | rate off]"

const policyHelp = `Reads the policy of queue QUEUE (echomq 2.7.0: the SDK's Queue.Policy):
whether it is paused, its concurrency cap, its rate limit and how long until
the limit admits the next start (2.8.0), the minor its tripwire names and
how many of its jobs are leased. With an action it changes the policy first
and prints it after:

  pause          claims lease nothing (producers keep enqueueing; the jobs
                 leased run to their end)            (Queue.Pause)
  resume         claims lease again; the doorbell is rung (Queue.Resume)
  concurrency N  at most N of the queue's jobs leased at once, across every
                 worker; 0 removes the cap           (Queue.SetConcurrency)
  rate N/PERIOD  at most N of the queue's jobs started (leased) in any
                 window of PERIOD, across every worker, paced one every
                 PERIOD/N; a job the limit holds back stays pending. N is
                 1 to 1000000; PERIOD a duration (500ms, 1s, 1m; a bare
                 unit is one of it: 100/s) of whole milliseconds, up to
                 24h. While a queue has a rate limit, the claims of every
                 2.7 client are refused there (its settles still go
                 through)                            (Queue.SetRateLimit)
  rate off       removes the rate limit (rate 0 too) (Queue.SetRateLimit)

A queue's first policy lays its tripwire: its leased jobs move to the
running set and every client older than 2.7 is refused on the queue
(WRONGTYPE) rather than served wrong; clearing the last policy restores the
classic layout. Before laying it the SDK refuses (exit 2) a deployment whose
bundle record names a release below the tripwire floor (` + wire.ActiveTripwireFloor + `), whose scripts
would write on the queue before they read it; -force skips that check, only
when no such client is left.

The client observes (emq.Observe) and refuses to write a keyspace whose
version record is absent or of another major. Exit 0, or 2 on bad input, a
refusal or an error.`

func runPolicy(e *env, args []string) int {
	f := &inspectFlags{fs: e.flags(policyWord, policySynopsis+" "+connSynopsis, policyHelp)}
	f.conn.flags(f.fs.FlagSet)
	f.format = f.fs.String("format", "text", "the output: text or json")
	force := f.fs.Bool("force", false, "lay the tripwire even when the bundle record names a release below its floor")
	if code, ok := f.fs.Parse(args); !ok {
		return code
	}
	pos := f.fs.Args()
	if len(pos) == 0 {
		e.errorf("policy: give the queue (emq policy -h)")
		return ExitUsage
	}
	if *f.format != "text" && *f.format != "json" {
		e.errorf("policy: -format %q: give text or json", *f.format)
		return ExitUsage
	}
	f.queue = &pos[0]
	action, n, per := "", 0, time.Duration(0)
	switch rest := pos[1:]; {
	case len(rest) == 0:
	case len(rest) == 1 && (rest[0] == "pause" || rest[0] == "resume"):
		action = rest[0]
	case len(rest) == 2 && rest[0] == "concurrency":
		v, err := strconv.Atoi(rest[1])
		if err != nil || v < 0 {
			e.errorf("policy: concurrency %q: give 0 (no cap) or a positive number; nothing was sent", rest[1])
			return ExitUsage
		}
		action, n = rest[0], v
	case len(rest) == 2 && rest[0] == "rate":
		v, p, err := parseRate(rest[1])
		if err != nil {
			e.errorf("policy: rate %q: %v; nothing was sent", rest[1], err)
			return ExitUsage
		}
		action, n, per = rest[0], v, p
	default:
		e.errorf("policy: %q: give pause, resume, concurrency N or rate N/PERIOD (rate off); nothing was sent", strings.Join(rest, " "))
		return ExitUsage
	}
	s, code := open(e, f, action != "", nil)
	if s == nil {
		return code
	}
	defer s.close()
	var opts []emq.PolicyOption
	if *force {
		opts = append(opts, emq.ForceTripwire())
	}
	var p emq.QueuePolicy
	var err error
	switch action {
	case "pause":
		p, err = s.q.Pause(s.ctx, opts...)
	case "resume":
		p, err = s.q.Resume(s.ctx)
	case "concurrency":
		p, err = s.q.SetConcurrency(s.ctx, n, opts...)
	case "rate":
		p, err = s.q.SetRateLimit(s.ctx, n, per, opts...)
	default:
		p, err = s.q.Policy(s.ctx)
	}
	if err != nil {
		e.errorf("policy %s: %v", s.q.Name(), err)
		return ExitUsage
	}
	if *f.format == "json" {
		writeJSON(e.stdout, map[string]any{"queue": s.q.Name(), policyWord: policyJSON(p)})
		return ExitOK
	}
	fmt.Fprintf(e.stdout, "queue %s: %s\n", s.q.Name(), policyText(p))
	return ExitOK
}

// Rate limit bounds (the configure_policy script's, as Queue.SetRateLimit
// checks them).
const (
	maxRateLimit  = 1000000
	maxRatePeriod = 24 * time.Hour
)

// parseRate reads a rate action's argument: N/PERIOD (PERIOD a Go
// duration, or a bare unit for one of it: 100/s), or off (or 0) for none
// (n 0).
func parseRate(v string) (n int, per time.Duration, err error) {
	if v == "off" || v == "0" {
		return 0, 0, nil
	}
	ns, ps, ok := strings.Cut(v, "/")
	if !ok {
		return 0, 0, fmt.Errorf("give N/PERIOD (100/1s, 50/500ms) or off")
	}
	n, err = strconv.Atoi(ns)
	if err != nil || n < 1 || n > maxRateLimit || ns[0] == '+' {
		return 0, 0, fmt.Errorf("the limit %q: give a whole number from 1 to %d (off removes the limit)", ns, maxRateLimit)
	}
	d := ps
	if d != "" && (d[0] < '0' || d[0] > '9') {
		d = "1" + d // a bare unit: one of it
	}
	per, err = time.ParseDuration(d)
	if err != nil || per < time.Millisecond || per > maxRatePeriod || per%time.Millisecond != 0 {
		return 0, 0, fmt.Errorf("the period %q: give a duration of whole milliseconds from 1ms to %v (500ms, 1s, 1m)", ps, maxRatePeriod)
	}
	return n, per, nil
}

// policyJSON is a queue's policy as the json outputs carry it: the
// fields of the read_policy script's reply, named as the manifest names
// them (paused, concurrency, requires, leased, rate_limit, rate_period_ms,
// admit_in_ms; the durations in milliseconds).
func policyJSON(p emq.QueuePolicy) map[string]any {
	values := []any{p.Paused, p.Concurrency, p.Requires, p.Leased, p.RateLimit, p.RatePeriod.Milliseconds(), p.AdmitIn.Milliseconds()}
	names := wire.ScriptReadPolicy.ReplyElements()
	out := make(map[string]any, len(values))
	for i, v := range values {
		if i < len(names) {
			out[names[i]] = v
		}
	}
	return out
}

// policyText is a queue's policy in a line: what holds its claims, and how
// many jobs are leased.
func policyText(p emq.QueuePolicy) string {
	var parts []string
	if p.Paused {
		parts = append(parts, string(emq.PolicyPaused))
	}
	if p.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("%s %d", emq.PolicyConcurrency, p.Concurrency))
	}
	if p.RateLimit > 0 {
		admit := "admits a start now"
		if p.AdmitIn > 0 {
			admit = "admits the next start in " + p.AdmitIn.String()
		}
		parts = append(parts, fmt.Sprintf("rate %d/%v (%s)", p.RateLimit, p.RatePeriod, admit))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("no policy; %d leased", p.Leased)
	}
	return fmt.Sprintf("%s; %d leased (the tripwire names minor %d)", strings.Join(parts, ", "), p.Leased, p.Requires)
}
