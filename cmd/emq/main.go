// Command emq is the EchoMQ operator's tool for live keyspaces: list the
// queues, inspect a queue (sizes, browse, show) and revive or purge its
// dead jobs (one by one or the whole dead set, with a dry run), probe a
// server against the protocol, and serve the web dashboard (emq dashboard). It is built on the public Go SDK alone
// (sdk/go/emq), never on the generator. Run emq -h.
package main

import (
	"os"

	"github.com/echomq/echomq/internal/cli/emqcli"
)

func main() { os.Exit(emqcli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
