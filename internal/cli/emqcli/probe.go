package emqcli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/probe"
)

var probeHelp = `Runs every probe of the protocol the SDK speaks (each reserve member's and
each wire class's; the SDK's Client.RunProbes) against a live server and
prints the transcript: one line per check, ending PASS n/m. Exit 0 when every
check passes, 1 when one fails, 2 on bad flags, or a connection, permission
or cleanup error.

It is safe on a production deployment:
  - the client observes (emq.Observe): it leases no node and never runs the
    fence, so the version record and the bundle identity are only read; the
    single exception is -claim on a keyspace with no version record at all;
  - each probe runs on a scratch queue of its own (` + emq.ScratchPrefix + `<fresh id>, refused
    when any of its keys exists) with freshly minted ids, and everything it
    wrote there is deleted when the probe ends, passed or not;
  - outside its scratch queue a probe touches only the reserve's lock fields
    named after the scratch queue, which it takes and releases itself (and
    which are removed if a failed probe left them);
  - a probe's command is sent only when the server's COMMAND INFO calls it
    read-only or every key it names belongs to the scratch queue;
  - a keyspace fenced by another major, or whose record is not a version
    record, is never fenced; the probes of the scratch queue and the probe
    lock still run, and the version and bundle checks fail, saying why.

-claim fences a fresh keyspace once, exactly as an SDK client does at connect
(it records this version and its bundle digest); a keyspace that has a record
is not fenced, with or without it.

-fence-db N adds a second transcript: the fence script's eight checks (fresh
keyspace, claim, read back, a second fence changes nothing, a lower record is
raised, a higher minor is admitted and never lowered, other majors refused and
left as found, the bundle digest recorded and a foreign one reported back), run
in logical database N, which must be empty (it is refused, untouched,
otherwise) and is emptied again afterwards. Redis Cluster has no logical
databases, so -fence-db is refused there.

The password may come from $` + PasswordEnv + `. The user needs, on the
protocol's keys: GET, TYPE, EXISTS, HGET, HEXISTS, HDEL, DEL, EVALSHA and
EVAL (and what the scripts call), COMMAND INFO (and COMMAND GETKEYS should a
probe's command write), and with -fence-db also SELECT, DBSIZE, DUMP, SET and
HSET.`

func runProbe(e *env, args []string) int {
	fs := e.flags("probe", connSynopsis+" [-claim] [-fence-db N]", probeHelp)
	var c conn
	c.flags(fs.FlagSet)
	claim := fs.Bool("claim", false, "claim a keyspace that has no version record, as an SDK client does at connect")
	fenceDB := fs.Int("fence-db", -1, "also run the fence's eight checks in this empty logical database (-1: skip)")
	if code, ok := fs.Parse(args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		e.errorf("probe takes no arguments (got %q)", strings.Join(fs.Args(), " "))
		return ExitUsage
	}
	if *fenceDB < -1 {
		e.errorf("-fence-db %d: a logical database is a number from 0 (or -1 to skip)", *fenceDB)
		return ExitUsage
	}
	opt, err := c.option()
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	cl, err := c.observe(ctx, opt)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	defer cl.Close()

	// The fence checks run first, so that -fence-db may name the probes'
	// own database while it is still as found; they print second.
	var fence *probe.Transcript
	if *fenceDB >= 0 {
		if cl.Redis().Mode() == rueidis.ClientModeCluster {
			e.errorf("-fence-db: %v", emq.ErrFenceDBCluster)
			return ExitUsage
		}
		fopt := opt
		fopt.SelectDB = *fenceDB
		fopt.ForceSingleClient = true
		frc, err := rueidis.NewClient(fopt)
		if err != nil {
			e.errorf("-fence-db %d: connecting to %s: %v", *fenceDB, c.Target(), err)
			return ExitUsage
		}
		fence, err = emq.RunFenceChecks(ctx, frc)
		frc.Close()
		if err != nil {
			if fence != nil {
				_ = fence.Write(e.stdout)
			}
			if errors.Is(err, emq.ErrFenceDBNotEmpty) {
				e.errorf("-fence-db %d: %v; nothing was run or written", *fenceDB, err)
			} else {
				e.errorf("-fence-db %d: %v", *fenceDB, err)
			}
			return ExitUsage
		}
	}

	if *claim {
		claimed, err := cl.ClaimKeyspace(ctx)
		switch {
		case err != nil && !claimed:
			e.errorf("claiming the keyspace: %v", err)
			return ExitUsage
		case claimed:
			e.errorf("claimed the keyspace: the fence found no version record and recorded %s = %q, as an SDK client of %s does at connect", wire.KeyVersion, cl.Keyspace().Record, emq.Version)
			if err != nil {
				e.errorf("the fence's answer: %v", err)
			}
		default:
			e.errorf("-claim: nothing to claim, %s already holds %q; it was not fenced", wire.KeyVersion, cl.Keyspace().Record)
		}
	}
	v := cl.Keyspace()
	switch v.Verdict {
	case emq.VersionAbsent:
		e.errorf("the keyspace has no version record (%s is absent) and nothing was claimed; run with -claim to claim it as an SDK client does at connect", wire.KeyVersion)
	case emq.VersionBehind:
		e.errorf("the keyspace's record %q is below %s; an SDK client of this version would raise it at connect, the prober does not", v.Record, emq.Version)
	case emq.VersionForeign:
		e.errorf("the keyspace belongs to another major or protocol (%s holds %q), so it was not fenced; only its scratch queues and probe locks were touched", wire.KeyVersion, v.Record)
	}

	t, err := cl.RunProbes(ctx)
	if t != nil {
		if v.Verdict == emq.VersionAbsent {
			for i := range t.Results {
				if r := &t.Results[i]; errors.Is(r.Err, emq.ErrNotFenced) {
					r.Err = fmt.Errorf("%w; without -claim nothing is claimed", r.Err)
				}
			}
		}
		_ = t.Write(e.stdout)
	}
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if fence != nil {
		_ = fence.Write(e.stdout)
	}
	if !t.OK() || (fence != nil && !fence.OK()) {
		return ExitFindings
	}
	return ExitOK
}
