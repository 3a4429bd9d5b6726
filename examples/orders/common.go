package orders

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/echomq/echomq/sdk/go/emq"
)

// DefaultAddr and DefaultQueue are the -addr and -queue defaults of both
// programs.
const (
	DefaultAddr  = "127.0.0.1:6379"
	DefaultQueue = "orders"
)

// common are the flags both programs take.
type common struct {
	addr  string
	queue string
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", DefaultAddr, "Redis `host:port`")
	fs.StringVar(&c.queue, "queue", DefaultQueue, "queue `name`")
}

// ErrUsage wraps a command-line error; the usage was printed already. For
// -h it also wraps flag.ErrHelp.
var ErrUsage = errors.New("usage")

// parse parses args into fs, writing usage and errors to out.
func parse(fs *flag.FlagSet, args []string, out io.Writer) error {
	fs.SetOutput(out)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		msg := "unexpected arguments: " + strings.Join(fs.Args(), " ")
		fmt.Fprintln(out, msg)
		fs.Usage()
		return fmt.Errorf("%w: %s", ErrUsage, msg)
	}
	return nil
}

// open connects to the keyspace at c.addr (fencing it) and returns the
// handle of c.queue.
func (c *common) open(ctx context.Context, log *slog.Logger, m emq.Metrics) (*emq.Client, *emq.Queue, error) {
	client, err := emq.Connect(ctx, emq.Options{
		Addr:    c.addr,
		Logger:  log,
		Metrics: m,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", c.addr, err)
	}
	q, err := client.Queue(c.queue)
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return client, q, nil
}

// lockedWriter serialises writes from the handlers, the reporter and the
// SDK's logger, so that lines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// newLogger logs text lines to w, which it serialises.
func newLogger(w io.Writer) (*slog.Logger, io.Writer) {
	lw := &lockedWriter{w: w}
	return slog.New(slog.NewTextHandler(lw, nil)), lw
}

// Main runs a service (RunProducer or RunWorker) as a command: SIGINT or
// SIGTERM cancels it (a second one kills at once), and its error becomes
// the exit status — 0, 2 after a usage message, 1 with the error printed.
func Main(name string, run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal kills at once
	}()
	err := run(ctx, os.Args[1:], os.Stdout)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, ErrUsage):
		os.Exit(2) // the usage was printed
	default:
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}
