// Command dashbench measures the dashboard under load: it starts its own
// redis-server, fills one queue with -jobs jobs (a million by default)
// through the SDK, serves the dashboard over HTTP on an observing client,
// and has -clients concurrent clients (100) load -loads pages each: the
// overview, the big queue's page, its newest pending page, pages deep in
// the set (cursors at random ranks), job pages of random jobs and the
// dead set's page. It reports the latency percentiles of the page loads,
// overall and by page, and checks on the server that no KEYS was sent and
// that no command of the slow log (10 ms or more) could have read a whole
// set.
//
//	go run ./cmd/dashbench                 # from dashboard/: 1,000,000 jobs, 100 clients
//	go run ./cmd/dashbench -jobs 20000 -loads 5 -max-p99 0   # a smoke run
//
// It exits 1 when KEYS was sent, when the slow log (10 ms) holds a read
// that could cover a whole set (a range without LIMIT or a short rank
// range), when a page load failed, or when the p99 exceeds -max-p99
// (100 ms; 0 turns that check off). Constant-time commands in the slow log
// are counted, not judged: on a loaded machine the server waits for a CPU.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

func main() {
	jobs := flag.Int("jobs", 1_000_000, "jobs in the big queue's pending set")
	clients := flag.Int("clients", 100, "concurrent page loads")
	loads := flag.Int("loads", 20, "page loads per client")
	maxP99 := flag.Duration("max-p99", 100*time.Millisecond, "fail when the p99 of the page loads exceeds it (0: report only)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the page loads (dashboard and clients) to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dashbench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "dashbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*jobs, *clients, *loads, *maxP99); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "dashbench:", err)
		os.Exit(1)
	}
}

// page is one kind of page load.
type page struct {
	name string
	url  func(r *rand.Rand) string
}

func run(jobs, clients, loads int, maxP99 time.Duration) error {
	ctx := context.Background()
	srv, err := redistest.StartServer()
	if err != nil {
		return err
	}
	defer srv.Close()
	opt := emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true}}
	c, err := emq.Connect(ctx, opt)
	if err != nil {
		return err
	}
	defer c.Close()

	start := time.Now()
	big, _ := c.Queue("big")
	if err := fill(ctx, c, big, jobs); err != nil {
		return err
	}
	// A few dead jobs in the big queue, and small queues beside it.
	for range 50 {
		id, _ := c.Mint(emq.WorkKind)
		if _, err := big.Push(ctx, id, []byte(`{"poison":true}`)); err != nil {
			return err
		}
	}
	for range 50 {
		j, ok, err := big.Claim(ctx, time.Hour)
		if err != nil || !ok {
			return fmt.Errorf("claim: %v %v", ok, err)
		}
		if err := big.Bury(ctx, j.ID, j.Token); err != nil {
			return err
		}
	}
	for i := range 20 {
		q, _ := c.Queue("small-" + strconv.Itoa(i))
		for range 10 {
			id, _ := c.Mint(emq.WorkKind)
			if _, err := q.Push(ctx, id, []byte("{}")); err != nil {
				return err
			}
		}
	}
	size, err := big.Size(ctx, emq.SetPending)
	if err != nil {
		return err
	}
	fmt.Printf("filled: %d pending jobs in queue big, 50 dead, 20 small queues, in %v\n", size, time.Since(start).Round(time.Millisecond))

	obs, err := emq.Observe(ctx, opt)
	if err != nil {
		return err
	}
	defer obs.Close()
	d, err := dashboard.New(dashboard.Options{Client: obs})
	if err != nil {
		return err
	}
	for range 2 {
		if err := d.Sample(ctx); err != nil {
			return err
		}
	}
	hs := httptest.NewServer(d)
	defer hs.Close()

	// Cursors and ids at random ranks of the pending set, read by rank
	// (ZRANGE by index: one member each).
	rc := c.Redis()
	key := big.Keys().Pending
	var deep []string
	for range 200 {
		r := rand.Int64N(size)
		m, err := rc.Do(ctx, rc.B().Zrange().Key(key).Min(strconv.FormatInt(r, 10)).Max(strconv.FormatInt(r, 10)).Build()).AsStrSlice()
		if err != nil || len(m) != 1 {
			return fmt.Errorf("member at rank %d: %v %v", r, m, err)
		}
		deep = append(deep, m[0])
	}
	pages := []page{
		{"overview", func(*rand.Rand) string { return "/" }},
		{"queue", func(*rand.Rand) string { return "/queue/big" }},
		{string(emq.SetPending) + ", newest", func(*rand.Rand) string { return "/queue/big/set/" + string(emq.SetPending) }},
		{string(emq.SetPending) + ", deep", func(r *rand.Rand) string {
			return "/queue/big/set/" + string(emq.SetPending) + "?after=" + deep[r.IntN(len(deep))]
		}},
		{"job", func(r *rand.Rand) string { return "/queue/big/job/" + deep[r.IntN(len(deep))] }},
		{string(emq.SetDead), func(*rand.Rand) string { return "/queue/big/set/" + string(emq.SetDead) }},
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	load := func(u string) (time.Duration, error) {
		t0 := time.Now()
		resp, err := hc.Get(hs.URL + u)
		if err != nil {
			return 0, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s", u, resp.Status)
		}
		return time.Since(t0), err
	}
	// Warm up: every page once (the queue list is scanned here).
	r0 := rand.New(rand.NewPCG(1, 2))
	for _, p := range pages {
		if el, err := load(p.url(r0)); err != nil {
			return err
		} else {
			fmt.Printf("warm-up %-16s %v\n", p.name, el.Round(time.Microsecond))
		}
	}

	for _, cmd := range [][]string{{"CONFIG", "SET", "slowlog-log-slower-than", "10000"}, {"SLOWLOG", "RESET"}, {"CONFIG", "RESETSTAT"}} {
		if _, err := srv.Do(cmd...); err != nil {
			return fmt.Errorf("%v: %w", cmd, err)
		}
	}
	var mu sync.Mutex
	byPage := map[string][]time.Duration{}
	var all []time.Duration
	var failures []error
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			for k := range loads {
				p := pages[(i+k)%len(pages)]
				el, err := load(p.url(r))
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else {
					byPage[p.name] = append(byPage[p.name], el)
					all = append(all, el)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)

	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		return err
	}
	var total int64
	keys := int64(0)
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		total += n
		if name == "cmdstat_keys" {
			keys = n
		}
	}
	slow, unbounded, err := slowlog(ctx, rc)
	if err != nil {
		return err
	}

	fmt.Printf("\n%d clients x %d loads = %d page loads in %v (%.0f loads/s), %d failed; %.1f commands per load\n",
		clients, loads, len(all), wall.Round(time.Millisecond), float64(len(all))/wall.Seconds(), len(failures), float64(total)/float64(max(1, len(all))))
	fmt.Printf("%-16s %6s %9s %9s %9s %9s\n", "page", "loads", "p50", "p90", "p99", "max")
	names := make([]string, 0, len(pages))
	for _, p := range pages {
		names = append(names, p.name)
	}
	for _, n := range append(names, "all") {
		ds := byPage[n]
		if n == "all" {
			ds = all
		}
		fmt.Printf("%-16s %6d %9v %9v %9v %9v\n", n, len(ds), pct(ds, 50), pct(ds, 90), pct(ds, 99), pct(ds, 100))
	}
	fmt.Printf("server: KEYS sent %d times; commands of 10 ms or more during the loads (SLOWLOG): %d, of which reads not bounded by a LIMIT or a rank range: %d\n", keys, slow, len(unbounded))

	var problems []string
	if len(failures) > 0 {
		problems = append(problems, fmt.Sprintf("%d page loads failed, the first: %v", len(failures), failures[0]))
	}
	if keys != 0 {
		problems = append(problems, "KEYS was sent")
	}
	if len(unbounded) > 0 {
		problems = append(problems, "reads of a whole set were logged: "+strings.Join(unbounded, "; "))
	}
	if p99 := pct(all, 99); maxP99 > 0 && p99 > maxP99 {
		problems = append(problems, fmt.Sprintf("p99 %v over %v", p99, maxP99))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	fmt.Println("ok")
	return nil
}

// slowlog reads the server's slow log: how many commands took 10 ms or
// more, and those among them that could read a whole set (a range read
// with neither a LIMIT nor a short rank range, KEYS, SMEMBERS...). The
// others (ZCARD, ZSCORE, HMGET...) take constant time: when they are slow
// the server was waiting for a CPU, which a loaded machine shows.
func slowlog(ctx context.Context, rc rueidis.Client) (int, []string, error) {
	entries, err := rc.Do(ctx, rc.B().SlowlogGet().Count(1000).Build()).ToArray()
	if err != nil {
		return 0, nil, fmt.Errorf("SLOWLOG GET: %w", err)
	}
	var unbounded []string
	for _, e := range entries {
		f, err := e.ToArray()
		if err != nil || len(f) < 4 {
			return 0, nil, fmt.Errorf("SLOWLOG GET: an entry %v: %v", f, err)
		}
		args, err := f[3].AsStrSlice()
		if err != nil || len(args) == 0 {
			return 0, nil, fmt.Errorf("SLOWLOG GET: the arguments of an entry: %v", err)
		}
		if !boundedRead(args) {
			unbounded = append(unbounded, strings.Join(args, " "))
		}
	}
	return len(entries), unbounded, nil
}

// boundedRead reports whether a command cannot read a whole set.
func boundedRead(args []string) bool {
	cmd := strings.ToUpper(args[0])
	switch cmd {
	case "KEYS", "SMEMBERS", "LRANGE", "SORT", "ZSCAN", "SSCAN", "HSCAN":
		return false
	case "ZRANGE", "ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX", "ZREVRANGEBYLEX":
	default:
		return true
	}
	by := false
	for _, a := range args[2:] {
		switch strings.ToUpper(a) {
		case "LIMIT":
			return true
		case "BYSCORE", "BYLEX":
			by = true
		}
	}
	if len(args) < 4 {
		return false
	}
	if by || cmd != "ZRANGE" && cmd != "ZREVRANGE" {
		// Between two equal bounds: the members tied at one score, as a
		// page's cursor reads them.
		return args[2] == args[3]
	}
	start, err1 := strconv.ParseInt(args[2], 10, 64)
	stop, err2 := strconv.ParseInt(args[3], 10, 64)
	return err1 == nil && err2 == nil && start >= 0 && stop >= start && stop-start < 1000
}

// fill pushes n jobs to q in batches, from a few goroutines.
func fill(ctx context.Context, c *emq.Client, q *emq.Queue, n int) error {
	const batch, workers = 2000, 4
	payload := []byte(`{"customer":"ORD0NgWEfAEJfs","items":[1,2,3],"total":1999}`)
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs := make([]emq.NewJob, 0, batch)
			for k := range next {
				jobs = jobs[:0]
				for range k {
					id, err := c.Mint(emq.WorkKind)
					if err != nil {
						errs <- err
						return
					}
					jobs = append(jobs, emq.NewJob{ID: id, Payload: payload})
				}
				if _, err := q.PushBatch(ctx, jobs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for left := n; left > 0; left -= batch {
		select {
		case next <- min(batch, left):
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// pct is the p-th percentile of ds (100: the largest).
func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[min(max(i-1, 0), len(s)-1)].Round(10 * time.Microsecond)
}
