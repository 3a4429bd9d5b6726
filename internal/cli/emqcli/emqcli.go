// Package emqcli is the command line of emq, the operator's tool for live
// EchoMQ keyspaces: inspect (queues, sizes, browse, show, revive, purge), policy
// (pause, resume, concurrency), probe, and dashboard (the web dashboard of the dashboard module).
// Everything it knows of the protocol comes from the public Go SDK
// (sdk/go/emq): keys, ids, scripts, pages and cursors, the version verdict
// and the probes; it imports neither the generator nor its model. Its flag
// habits are emqgen's (internal/cmdflag): flags anywhere among the
// arguments, -h on stdout, the nearest command suggested. Main is the
// whole program; tests drive it in-process.
package emqcli

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/echomq/echomq/internal/cmdflag"
)

// Exit statuses.
const (
	ExitOK       = 0 // success
	ExitFindings = 1 // the command ran and found a problem (a failed check, a job not found or not dead)
	ExitUsage    = 2 // bad input, a keyspace it refuses to write, or an error
)

// env carries a run's output streams.
type env struct {
	stdout, stderr io.Writer
}

// errorf prints a message to stderr, after the program's name, once: the
// SDK's errors open with the same "emq: ", which the message drops.
func (e *env) errorf(format string, args ...any) {
	msg := strings.ReplaceAll(fmt.Sprintf(format, args...), "emq: ", "")
	fmt.Fprintln(e.stderr, "emq: "+msg)
}

// flags returns the flag set of an emq command (see cmdflag).
func (e *env) flags(name, synopsis, summary string) *cmdflag.FlagSet {
	return cmdflag.New("emq", name, synopsis, summary, e.stdout, e.stderr)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "help"
}

type command struct {
	summary string
	run     func(e *env, args []string) int
}

func commands() map[string]command {
	return map[string]command{
		"dashboard": {"serve the web dashboard of a live keyspace (read-only unless -actions)", runDashboard},
		"inspect":   {"list the queues of a live keyspace, read one (sizes, browse, show) and revive or purge its dead jobs", runInspect},
		policyWord:  {"read a queue's policy, or pause, resume or cap its concurrency", runPolicy},
		"probe":     {"run every probe of the protocol against a live server and print the transcript", runProbe},
	}
}

// Main runs emq with args (without the program name) and returns the exit
// status.
func Main(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	cmds := commands()
	if len(args) == 0 || isHelp(args[0]) {
		usage(stdout, cmds)
		if len(args) == 0 {
			return ExitUsage
		}
		return ExitOK
	}
	c, ok := cmds[args[0]]
	if !ok {
		var names []string
		for n := range cmds {
			names = append(names, n)
		}
		if near := cmdflag.Suggest(args[0], names); near != "" {
			e.errorf("unknown command %q; did you mean %s?", args[0], near)
		} else {
			e.errorf("unknown command %q", args[0])
		}
		usage(stderr, cmds)
		return ExitUsage
	}
	return c.run(e, args[1:])
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "emq is the EchoMQ operator's tool for live keyspaces, built on the Go SDK.")
	fmt.Fprintln(w, "\nUsage: emq <command> [flags]\n\nCommands:")
	var names []string
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun emq <command> -h for a command's flags.")
}
