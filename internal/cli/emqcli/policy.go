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

const policySynopsis = "[-format text|json] [-force] QUEUE [pause | resume | concurrency N | rate N PERIOD]"

const policyHelp = `Reads the policy of queue QUEUE (echomq 2.7.0: the SDK's Queue.Policy):
whether it is paused, its concurrency cap, its rate limit (2.8.0), the
minor its tripwire names and how many of its jobs are leased. With an
action it changes the policy first and prints it after:

  pause          claims lease nothing (producers keep enqueueing; the jobs
                 leased run to their end)            (Queue.Pause)
  resume         claims lease again; the doorbell is rung (Queue.Resume)
  concurrency N  at most N of the queue's jobs leased at once, across every
                 worker; 0 removes the cap           (Queue.SetConcurrency)
  rate N PERIOD  at most N of the queue's jobs started in any window of
                 PERIOD (a duration such as 1s or 500ms, whole
                 milliseconds), across every worker, paced; the jobs held
                 back stay pending; rate 0 removes the limit
                 (Queue.SetRateLimit)

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
	case (len(rest) == 2 || len(rest) == 3) && rest[0] == "rate":
		v, err := strconv.Atoi(rest[1])
		if err != nil || v < 0 || v > 0 && len(rest) != 3 {
			e.errorf("policy: rate %q: give 0 (no limit) or a positive number and a period; nothing was sent", strings.Join(rest[1:], " "))
			return ExitUsage
		}
		if len(rest) == 3 {
			if per, err = time.ParseDuration(rest[2]); err != nil {
				e.errorf("policy: rate period %q: give a duration such as 1s or 500ms; nothing was sent", rest[2])
				return ExitUsage
			}
		}
		action, n = rest[0], v
	default:
		e.errorf("policy: %q: give pause, resume, concurrency N or rate N PERIOD; nothing was sent", strings.Join(rest, " "))
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

// policyJSON is a queue's policy as the json outputs carry it, keyed by
// the policy vocabulary's words.
func policyJSON(p emq.QueuePolicy) map[string]any {
	return map[string]any{string(emq.PolicyPaused): p.Paused, string(emq.PolicyConcurrency): p.Concurrency, "requires": p.Requires, "leased": p.Leased,
		string(emq.PolicyRateLimit): p.RateLimit, "rate_period_ms": p.RatePeriod.Milliseconds(), "admit_in_ms": p.AdmitIn.Milliseconds()}
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
		next := "now"
		if p.AdmitIn > 0 {
			next = "in " + p.AdmitIn.String()
		}
		parts = append(parts, fmt.Sprintf("rate limit %d per %v (next start %s)", p.RateLimit, p.RatePeriod, next))
	}
	if len(parts) == 0 {
		return fmt.Sprintf("no policy; %d leased", p.Leased)
	}
	return fmt.Sprintf("%s; %d leased (the tripwire names minor %d)", strings.Join(parts, ", "), p.Leased, p.Requires)
}
