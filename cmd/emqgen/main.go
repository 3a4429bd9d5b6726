// Command emqgen turns protocol.yaml into the EchoMQ SDKs (Go, Lua) and
// docs, and keeps the protocol honest as it evolves. Run emqgen -h.
package main

import (
	"os"

	"github.com/echomq/echomq/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
