// Command emqconform runs the EchoMQ conformance suite (conformance/) for
// every language of conformance/languages.json, or those named by -lang,
// against its own redis-server, and prints PASS n/m per language with
// every failure. It exits 1 when a language fails a case it does not list
// as an expected failure, or lists a case that passes.
//
// The behavioural witness of emqgen check runs it too: -testee names a
// prebuilt Go testee, -scenarios another directory of scenario files (a
// release's witness), -manifest the manifest placeholders resolve from,
// -addr a server to use, and -json prints the results as JSON on stdout;
// expected-failures lists are not read then. With -json it exits 0 when
// the cases ran, whatever they found, and 3 when they could not run (no
// server, a testee that does not start), with {"error": ...} on stdout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"time"

	"github.com/echomq/echomq/conformance/runner"
)

// exitNotRun is -json's status when the cases could not run.
const exitNotRun = 3

func main() {
	root := flag.String("root", ".", "the repository root")
	langs := flag.String("lang", "", "comma-separated languages to run (default: every language of conformance/languages.json)")
	run := flag.String("run", "", "run only the cases whose id matches this regexp")
	verbose := flag.Bool("v", false, "name every case and pass the testee's stderr through")
	timeout := flag.Duration("timeout", 30*time.Second, "how long one request may take")
	manifest := flag.String("manifest", "", "the manifest placeholders resolve from (default ROOT/protocol.yaml)")
	scenarios := flag.String("scenarios", "", "run hello and the scenario files of this directory instead of the suite")
	testee := flag.String("testee", "", "a prebuilt Go testee to run instead of the languages of languages.json (expected failures are not read)")
	addr := flag.String("addr", "", "a server to run against (it is flushed) instead of one of its own")
	asJSON := flag.Bool("json", false, "print the results as JSON on stdout")
	trace := flag.Bool("trace", false, "record every language's wire trace (the script calls it sent, from the server's MONITOR feed) and fail a language whose trace differs from the first one's at any step")
	flag.Parse()
	opt := runner.Options{Root: *root, Verbose: *verbose, Timeout: *timeout, Manifest: *manifest, Addr: *addr, Trace: *trace}
	if *langs != "" {
		opt.Languages = strings.Split(*langs, ",")
	}
	if *run != "" {
		re, err := regexp.Compile(*run)
		if err != nil {
			fmt.Fprintln(os.Stderr, "emqconform: -run:", err)
			os.Exit(2)
		}
		opt.Match = re
	}
	if *scenarios != "" {
		sc, err := runner.LoadScenarios(*scenarios)
		if err != nil {
			fmt.Fprintln(os.Stderr, "emqconform: -scenarios:", err)
			os.Exit(2)
		}
		opt.Suite = &runner.Suite{Scenarios: sc}
	}
	if *testee != "" {
		opt.Testees = []runner.Language{{Name: "go", Run: []string{*testee}}}
		opt.NoExpected = true
	}
	if *asJSON {
		opt.Out = io.Discard
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := runner.Run(ctx, opt)
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		if err != nil {
			_ = enc.Encode(map[string]string{"error": err.Error()})
			os.Exit(exitNotRun)
		}
		if err := enc.Encode(map[string]any{"results": results}); err != nil {
			fmt.Fprintln(os.Stderr, "emqconform:", err)
			os.Exit(exitNotRun)
		}
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "emqconform:", err)
		os.Exit(1)
	}
	for _, r := range results {
		if !r.OK() {
			os.Exit(1)
		}
	}
}
