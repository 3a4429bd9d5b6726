// Package cli is emqgen's command line: gen, validate and the subcommands
// that build on them. Main is the whole program; tests drive it in-process.
package cli

import (
	"fmt"
	"io"
	"sort"

	"github.com/echomq/echomq/internal/cmdflag"
)

// Exit statuses.
const (
	ExitOK       = 0 // success
	ExitFindings = 1 // the command ran and found a problem (stale files, an invalid manifest, a failed gate)
	ExitUsage    = 2 // bad input or a tool error
)

type command struct {
	summary string
	run     func(env *env, args []string) int
}

// env carries a run's output streams.
type env struct {
	stdout, stderr io.Writer
}

func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "emqgen: "+format+"\n", args...)
}

func commands() map[string]command {
	return map[string]command{
		"check":    {"the PR gate: classify the manifest's changes against a baseline and check the declared version", runCheck},
		"diff":     {"classify every change between two manifests and the version bump it requires", runDiff},
		"gen":      {"regenerate the Go SDK, the Lua bundle and the docs from the manifest", runGen},
		"release":  {"freeze the current manifest as golden/releases/<version>.yaml with its API record", runRelease},
		"validate": {"check a manifest and print every problem as FILE:LINE:COL: message", runValidate},
	}
}

// Main runs emqgen with args (without the program name) and returns the
// exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr}
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
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
	fmt.Fprintln(w, "emqgen turns protocol.yaml into the EchoMQ SDKs and keeps the protocol honest.")
	fmt.Fprintln(w, "The operator's tool for live keyspaces (inspect, probe) is emq, built on the Go SDK: go run ./cmd/emq -h.")
	fmt.Fprintln(w, "\nUsage: emqgen <command> [flags]\n\nCommands:")
	var names []string
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun emqgen <command> -h for a command's flags.")
}

// flags returns the flag set of an emqgen command: flags anywhere among
// the arguments, -h on stdout (see cmdflag).
func (e *env) flags(name, synopsis, summary string) *cmdflag.FlagSet {
	return cmdflag.New("emqgen", name, synopsis, summary, e.stdout, e.stderr)
}

// parse parses args; it returns the exit status to use and false when the
// command must stop (help printed, or bad flags).
func parse(fs *cmdflag.FlagSet, args []string) (int, bool) {
	return fs.Parse(args)
}
