package emqcli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
)

// DashboardPasswordEnv holds the password of -auth-user.
const DashboardPasswordEnv = "EMQ_DASHBOARD_PASSWORD"

// dashboardContext is the context a dashboard serves until: until SIGINT
// or SIGTERM. Tests replace it.
var dashboardContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

const dashboardHelp = `Serves the web dashboard (the dashboard module, on the SDK) of a live
keyspace at -listen until interrupted: every queue with its set sizes,
doorbell, migration record, oldest pending age, expired leases and due
run-ats; backlog and throughput charts sampled every -sample; newest-first
pages of every set on the SDK's stable cursors; search by id; job pages.

It is read-only unless -actions is given; then dead jobs can be revived or
purged and scheduled jobs run now, each after a confirmation whose form
carries a CSRF token. -auth-user U requires HTTP basic authentication as U
with the password in $` + DashboardPasswordEnv + `; -actions on an address other
than loopback is refused without it. -mask hides payloads, -mask-fields
hides the named members of JSON payloads.

The client observes (emq.Observe): the fence never runs; actions refuse to
write a keyspace whose version record is absent or of another major.
Connects like emq probe; the password may come from $` + PasswordEnv + `.`

func runDashboard(e *env, args []string) int {
	fs := e.flags("dashboard", "[-listen HOST:PORT] [-actions] [-auth-user U] [-queues Q,...] [-mask | -mask-fields F,...] [-sample D] "+connSynopsis, dashboardHelp)
	var c conn
	c.flags(fs.FlagSet)
	listen := fs.String("listen", "127.0.0.1:8080", "the address to serve HTTP on")
	actions := fs.Bool("actions", false, "enable revive, purge, run-now and a queue's pause, resume and concurrency cap (read-only without)")
	user := fs.String("auth-user", "", "require HTTP basic authentication as this user (the password from $"+DashboardPasswordEnv+")")
	queues := fs.String("queues", "", "show only these queues, comma-separated (default: every queue found by SCAN)")
	mask := fs.Bool("mask", false, "hide every payload")
	maskFields := fs.String("mask-fields", "", "hide these members of JSON payloads, comma-separated (other payloads are hidden whole)")
	sample := fs.Duration("sample", 5*time.Second, "how often the charts are sampled")
	if code, ok := fs.Parse(args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		e.errorf("dashboard: unexpected arguments %q", fs.Args())
		return ExitUsage
	}
	opt, err := c.option()
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	o := dashboard.Options{Actions: *actions, SampleEvery: *sample}
	if *queues != "" {
		for _, q := range strings.Split(*queues, ",") {
			q = strings.TrimSpace(q)
			if err := emq.ValidateQueueName(q); err != nil {
				e.errorf("dashboard: -queues: %v; nothing was sent", err)
				return ExitUsage
			}
			o.Queues = append(o.Queues, q)
		}
	}
	switch {
	case *mask && *maskFields != "":
		e.errorf("dashboard: give -mask or -mask-fields, not both")
		return ExitUsage
	case *mask:
		o.Mask = dashboard.MaskAll
	case *maskFields != "":
		o.Mask = dashboard.MaskJSONFields(strings.Split(*maskFields, ",")...)
	}
	if *user != "" {
		pw := os.Getenv(DashboardPasswordEnv)
		if pw == "" {
			e.errorf("dashboard: -auth-user needs the password in $%s", DashboardPasswordEnv)
			return ExitUsage
		}
		o.Auth = dashboard.BasicAuth(*user, pw)
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		e.errorf("dashboard: -listen %q: %v", *listen, err)
		return ExitUsage
	}
	if ip := net.ParseIP(host); *actions && *user == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		e.errorf("dashboard: -actions on %s, beyond loopback, needs -auth-user", *listen)
		return ExitUsage
	}

	ctx, stop := dashboardContext()
	defer stop()
	dctx, cancel := context.WithTimeout(ctx, c.Timeout)
	cl, err := c.observe(dctx, opt)
	cancel()
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	defer cl.Close()
	if w := warning(cl.Keyspace()); w != "" {
		e.errorf("warning: %s", w)
	}
	o.Client = cl
	d, err := dashboard.New(o)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		e.errorf("dashboard: %v", err)
		return ExitUsage
	}
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 10 * time.Second}
	mode := "read-only"
	if *actions {
		mode = "actions enabled"
	}
	fmt.Fprintf(e.stdout, "emq dashboard: serving http://%s/ (%s) for %s\n", ln.Addr(), mode, c.Target())
	go func() { _ = d.Run(ctx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			e.errorf("dashboard: %v", err)
			return ExitUsage
		}
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	return ExitOK
}
