// Command emqconform runs the EchoMQ conformance suite (conformance/) for
// every language of conformance/languages.json, or those named by -lang,
// against its own redis-server, and prints PASS n/m per language with
// every failure. It exits 1 when a language fails a case it does not list
// as an expected failure, or lists a case that passes.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"time"

	"github.com/echomq/echomq/conformance/runner"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	langs := flag.String("lang", "", "comma-separated languages to run (default: every language of conformance/languages.json)")
	run := flag.String("run", "", "run only the cases whose id matches this regexp")
	verbose := flag.Bool("v", false, "name every case and pass the testee's stderr through")
	timeout := flag.Duration("timeout", 30*time.Second, "how long one request may take")
	list := flag.Bool("list", false, "print the id of every case (that -run selects) and exit")
	flag.Parse()
	opt := runner.Options{Root: *root, Verbose: *verbose, Timeout: *timeout}
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
	if *list {
		suite, err := runner.Load(*root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "emqconform:", err)
			os.Exit(1)
		}
		for _, id := range suite.IDs(opt.Match) {
			fmt.Println(id)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := runner.Run(ctx, opt)
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
