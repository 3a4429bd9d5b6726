// Command emqprom is the standalone EchoMQ exporter for Prometheus: it
// observes a keyspace (emq.Observe: it never fences, writes nothing and
// leases no node) and serves, on /metrics, the emqprom.Queues collector:
// each queue's set sizes, oldest pending age, expired leases and due
// run-ats, and the server's settle counters (emq_jobs_completed_total,
// emq_jobs_failed_total, emq_jobs_retried_total, emq_jobs_dead_total per
// queue, echomq 2.4.0), read from the server at every scrape.
//
//	emqprom -addr 127.0.0.1:6379 -listen 127.0.0.1:9478 [-queues a,b] [-user U] [-url URL]
//
// The password comes from $EMQ_REDIS_PASSWORD (or -url). With -queues, this
// user is enough (TestRunAsLeastPrivilegeUser), for queue orders:
//
//	ACL SETUSER emq-exporter reset on >PASSWORD resetchannels +ping +cluster|slots +get +zcard +zrange +zcount +exists +hmget +hlen +time +evalsha_ro +eval_ro %R~{emq}:version %R~emq:{orders}:*
//
// Without -queues it also needs +scan, to find the queues.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	emqprom "github.com/echomq/echomq/exporters/prometheus"
	"github.com/echomq/echomq/sdk/go/emq"
)

// passwordEnv is read for the password, never a flag (a flag shows in ps).
const passwordEnv = "EMQ_REDIS_PASSWORD"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// run is the command: it serves until ctx ends (exit 0), or fails to
// start (exit 2). ready, when set, receives the address it listens on.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) int {
	fs := flag.NewFlagSet("emqprom", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6379", "the server's host:port (or give -url)")
	url := fs.String("url", "", "the server as a URL instead of -addr: redis://[user:password@]host:port[/db], rediss:// for TLS")
	user := fs.String("user", "", "the ACL user (default: the default user)")
	listen := fs.String("listen", "127.0.0.1:9478", "where to serve /metrics")
	queues := fs.String("queues", "", "the queues to read, comma-separated (default: every queue a bounded SCAN finds)")
	timeout := fs.Duration("timeout", 5*time.Second, "the bound of one scrape's reads, and of connecting")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	o := emqprom.QueuesOptions{Timeout: *timeout}
	if *queues != "" {
		o.Queues = strings.Split(*queues, ",")
	}
	// No client-side cache: the collector reads fresh values at every
	// scrape, and the user needs no CLIENT TRACKING.
	ro := rueidis.ClientOption{InitAddress: []string{*addr}, Username: *user, Password: os.Getenv(passwordEnv)}
	if *url != "" {
		u, err := rueidis.ParseURL(*url)
		if err != nil {
			fmt.Fprintf(stderr, "emqprom: -url: %v\n", err)
			return 2
		}
		ro = u
	}
	ro.DisableCache = true
	opt := emq.Options{Logger: log, Redis: ro}
	cctx, cancel := context.WithTimeout(ctx, *timeout)
	c, err := emq.Observe(cctx, opt)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "emqprom: %v\n", err)
		return 2
	}
	defer c.Close()
	h, err := emqprom.Handler(c, o)
	if err != nil {
		fmt.Fprintf(stderr, "emqprom: %v\n", err)
		return 2
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "emqprom: %v\n", err)
		return 2
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("emqprom: serving /metrics", "listen", ln.Addr().String())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "emqprom: %v\n", err)
		return 2
	}
	return 0
}
