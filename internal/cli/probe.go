package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/gen/live"
	"github.com/echomq/echomq/sdk/go/probe"
)

var probeHelp = strings.ReplaceAll(`Runs every probe of the manifest (each reserve member's and each wire class's)
against a live server and prints the transcript: one line per check, ending
PASS n/m. Exit 0 when every check passes, 1 when one fails, 2 on bad flags,
a manifest that cannot be used, or a connection, permission or cleanup error.

It is safe on a production deployment:
  - each probe runs on a scratch queue of its own (SCRATCH<fresh id>, refused
    when any of its keys exists) with freshly minted ids, and everything it
    wrote there is deleted when the probe ends, passed or not;
  - outside its scratch queue a probe touches only the reserve's lock field
    named after the scratch queue, which it takes and releases itself (and
    which is removed if a failed probe left it);
  - it never writes the version record or the bundle identity: the script
    that writes them does not run, and a probe's command is sent only when the
    server's COMMAND INFO calls it read-only or every key it names belongs to
    the scratch queue. The single exception is -claim on a keyspace with no
    version record at all;
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

The user needs, on the protocol's keys: GET, TYPE, EXISTS, HGET, HEXISTS,
HDEL, DEL, EVALSHA and EVAL (and what the scripts call), COMMAND INFO (and
COMMAND GETKEYS should a probe's command write), and with -fence-db also
SELECT, DBSIZE, DUMP, SET and HSET.`, "SCRATCH", live.ScratchPrefix)

func runProbe(e *env, args []string) int {
	fs := e.flags("probe", "[-addr HOST:PORT] [-user NAME] [-password PASS] [-tls [-tls-ca FILE] [-tls-server-name NAME]] [-claim] [-fence-db N] [-manifest FILE] [-timeout D]", probeHelp)
	file := fs.String("manifest", "protocol.yaml", "the manifest whose probes to run")
	var conn live.Conn
	conn.Flags(fs.FlagSet)
	claim := fs.Bool("claim", false, "claim a keyspace that has no version record, as an SDK client does at connect")
	fenceDB := fs.Int("fence-db", -1, "also run the fence's eight checks in this empty logical database (-1: skip)")
	if code, ok := parse(fs, args); !ok {
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
	opt, err := conn.Option()
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	p, code := e.load(*file)
	if p == nil {
		return code
	}

	ctx, cancel := context.WithTimeout(context.Background(), conn.Timeout)
	defer cancel()
	rc, err := conn.Dial(opt)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	defer rc.Close()

	// The fence checks run first, so that -fence-db may name the probes'
	// own database while it is still as found; they print second.
	var fence *probe.Transcript
	if *fenceDB >= 0 {
		if rc.Mode() == rueidis.ClientModeCluster {
			e.errorf("-fence-db: %v", live.ErrCluster)
			return ExitUsage
		}
		fopt := opt
		fopt.SelectDB = *fenceDB
		fopt.ForceSingleClient = true
		frc, err := conn.Dial(fopt)
		if err != nil {
			e.errorf("-fence-db %d: %v", *fenceDB, err)
			return ExitUsage
		}
		fence, err = live.RunFence(ctx, p, frc)
		frc.Close()
		if err != nil {
			if fence != nil {
				_ = fence.Write(e.stdout)
			}
			if errors.Is(err, live.ErrNotEmpty) {
				e.errorf("-fence-db %d: %v; nothing was run or written", *fenceDB, err)
			} else {
				e.errorf("-fence-db %d: %v", *fenceDB, err)
			}
			return ExitUsage
		}
	}

	t, err := live.Run(ctx, p, rc, live.Options{Claim: *claim, Note: func(msg string) { e.errorf("%s", msg) }})
	if t != nil {
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
