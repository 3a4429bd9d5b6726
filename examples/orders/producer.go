package orders

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// pushTimeout bounds one Push or PushBatch. Pushes run on a context that a
// signal does not cancel: an order taken in is pushed before the producer
// exits, not dropped halfway.
const pushTimeout = 5 * time.Second

// RunProducer is the producer service. It takes orders in — n simulated
// orders of random quantity (-n), or one quantity per line of a file or
// standard input (-in) — mints an ORD id for each and enqueues a JOB whose
// payload carries the order, printing one line per job:
//
//	enqueued JOB0Nu3Bq7VPRA order=ORD0Nu3Bq7VPR9 qty=3
//
// With -batch 1 each job is admitted with Push; with -batch > 1 jobs are
// gathered and admitted with PushBatch, a batch going out when it is full,
// when no order came in for -linger, at the end of the input and at
// shutdown. When ctx is done (SIGINT or SIGTERM in the program) it stops
// taking orders, pushes those in hand and returns nil: that is a clean
// exit. args are the command-line flags, without the program name.
func RunProducer(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("producer", flag.ContinueOnError)
	var (
		cf     common
		n      = fs.Int("n", 10, "how many orders to simulate, each of a random quantity 1..9 (ignored with -in)")
		in     = fs.String("in", "", "read one order quantity per line from `file` (- for standard input) instead of simulating")
		rate   = fs.Float64("rate", 0, "orders taken in per second; 0 for as fast as they come")
		batch  = fs.Int("batch", 1, "jobs admitted per round trip: 1 pushes each with Push, more gathers them for PushBatch")
		linger = fs.Duration("linger", 200*time.Millisecond, "with -batch > 1, the longest a partial batch waits for more orders")
	)
	cf.register(fs)
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	if *batch < 1 || *n < 0 || *rate < 0 || *linger <= 0 {
		return fmt.Errorf("-batch must be at least 1, -n and -rate not negative, -linger positive")
	}
	log, out := newLogger(stdout)

	var src <-chan int
	var srcErr <-chan error
	if *in != "" {
		r, closeIn, err := openInput(*in)
		if err != nil {
			return err
		}
		defer closeIn()
		src, srcErr = readQuantities(ctx, r, log)
	} else {
		src, srcErr = simulate(ctx, *n)
	}

	tally := &emq.Tally{}
	client, q, err := cf.open(ctx, log, tally)
	if err != nil {
		return err
	}
	defer client.Close()

	p := &producer{q: q, out: out, log: log}
	var tick <-chan time.Time
	if *rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / *rate))
		defer t.Stop()
		tick = t.C
	}
	lingerT := time.NewTimer(*linger)
	lingerT.Stop()
	start := time.Now()
	interrupted := false
	var failure error // stops the intake; the jobs in hand are still pushed

loop:
	for {
		if tick != nil {
			select {
			case <-ctx.Done():
				interrupted = true
				break loop
			case <-tick:
			}
		}
		var qty int
		var ok bool
		select {
		case <-ctx.Done():
			interrupted = true
			break loop
		case <-lingerT.C:
			p.flush()
			continue
		case qty, ok = <-src:
		}
		if !ok {
			// The source also closes when ctx ends; that is an interruption,
			// whichever of the two the select saw first.
			interrupted = ctx.Err() != nil
			break loop
		}
		job, o, err := newOrder(client, qty)
		if err != nil {
			failure = err
			break loop
		}
		p.add(job, o)
		if len(p.jobs) >= *batch {
			lingerT.Stop()
			p.flush()
		} else if len(p.jobs) == 1 {
			lingerT.Reset(*linger)
		}
	}
	p.flush()
	if failure != nil {
		return failure
	}
	if !interrupted {
		if err := <-srcErr; err != nil { // the source ended: its error is sent
			return err
		}
	}
	if interrupted {
		fmt.Fprintln(out, "interrupted: stopped taking orders; the orders in hand were pushed")
	}
	fmt.Fprintf(out, "produced %d orders in %v: %d enqueued, %d duplicates, %d failed (sdk counted enqueued=%d)\n",
		p.taken, time.Since(start).Round(time.Millisecond), p.enqueued, p.duplicates, p.failed, tally.Get(emq.Enqueued))
	if p.failed > 0 {
		return fmt.Errorf("%d orders could not be enqueued", p.failed)
	}
	return nil
}

// newOrder mints the id of an incoming order and the id of the job that
// carries it, and encodes the payload.
func newOrder(c *emq.Client, qty int) (emq.NewJob, Order, error) {
	var err error
	o := Order{Qty: qty}
	if o.ID, err = c.Mint(emq.KindORD); err != nil {
		return emq.NewJob{}, Order{}, fmt.Errorf("minting an order id: %w", err)
	}
	job := emq.NewJob{}
	if job.ID, err = c.Mint(emq.WorkKind); err != nil {
		return emq.NewJob{}, Order{}, fmt.Errorf("minting a job id: %w", err)
	}
	if job.Payload, err = o.Payload(); err != nil {
		return emq.NewJob{}, Order{}, err
	}
	return job, o, nil
}

// producer gathers jobs and admits them.
type producer struct {
	q   *emq.Queue
	out io.Writer
	log *slog.Logger

	jobs  []emq.NewJob
	cargo []Order // cargo[i] is the order of jobs[i], for printing

	taken, enqueued, duplicates, failed int
}

func (p *producer) add(j emq.NewJob, o Order) {
	p.jobs = append(p.jobs, j)
	p.cargo = append(p.cargo, o)
	p.taken++
}

// flush admits the gathered jobs: one Push for a single job, one PushBatch
// round trip for several.
func (p *producer) flush() {
	if len(p.jobs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pushTimeout)
	defer cancel()
	var enqueued []bool
	errs := make([]error, len(p.jobs))
	if len(p.jobs) == 1 {
		ok, err := p.q.Push(ctx, p.jobs[0].ID, p.jobs[0].Payload)
		enqueued, errs[0] = []bool{ok}, err
	} else {
		var err error
		enqueued, err = p.q.PushBatch(ctx, p.jobs)
		var be *emq.BatchError
		switch {
		case errors.As(err, &be):
			errs = be.Errs
		case err != nil: // nothing was admitted
			enqueued = make([]bool, len(p.jobs))
			for i := range errs {
				errs[i] = err
			}
		}
	}
	for i, j := range p.jobs {
		o := p.cargo[i]
		switch {
		case errs[i] != nil:
			p.failed++
			p.log.Error("enqueue failed", "job", j.ID, "order", o.ID, "err", errs[i])
		case enqueued[i]:
			p.enqueued++
			fmt.Fprintf(p.out, "enqueued %s order=%s qty=%d\n", j.ID, o.ID, o.Qty)
		default:
			p.duplicates++
			fmt.Fprintf(p.out, "duplicate %s order=%s qty=%d\n", j.ID, o.ID, o.Qty)
		}
	}
	p.jobs, p.cargo = p.jobs[:0], p.cargo[:0]
}

// openInput opens the -in file; "-" is standard input.
func openInput(name string) (io.Reader, func(), error) {
	if name == "-" {
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// simulate sends n random quantities, 1..9, then closes the channel; its
// error channel holds nil from the start.
func simulate(ctx context.Context, n int) (<-chan int, <-chan error) {
	src, errc := make(chan int), make(chan error, 1)
	go func() {
		defer close(src)
		errc <- nil
		for range n {
			select {
			case src <- 1 + mrand.IntN(9):
			case <-ctx.Done():
				return
			}
		}
	}()
	return src, errc
}

// readQuantities sends one quantity per line of r, skipping blank lines
// and logging lines that are not a positive integer. When it stops (at the
// end of r, or when ctx is done) it sends the read error, nil at EOF, and
// then closes the channel. A read blocked on a terminal outlives ctx; the
// program exits around it.
func readQuantities(ctx context.Context, r io.Reader, log *slog.Logger) (<-chan int, <-chan error) {
	src, errc := make(chan int), make(chan error, 1)
	go func() {
		var err error
		defer func() {
			errc <- err // before the close, so that a closed channel means it is there
			close(src)
		}()
		sc := bufio.NewScanner(r)
		for line := 1; sc.Scan(); line++ {
			text := strings.TrimSpace(sc.Text())
			if text == "" {
				continue
			}
			qty, perr := strconv.Atoi(text)
			if perr != nil || qty <= 0 {
				log.Warn("skipping a line that is not a positive quantity", "line", line, "text", text)
				continue
			}
			select {
			case src <- qty:
			case <-ctx.Done():
				return
			}
		}
		if sc.Err() != nil {
			err = fmt.Errorf("reading orders: %w", sc.Err())
		}
	}()
	return src, errc
}
