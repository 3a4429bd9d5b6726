package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ClusterInstallHint says how to get what a cluster needs: redis-server and
// redis-cli (redis-cli --cluster create forms the cluster).
const ClusterInstallHint = "a Redis Cluster needs redis-server and redis-cli; install them with: sudo apt-get install -y redis-server (it brings redis-tools, which has redis-cli; or run ./test.sh)"

// ClusterSlots is the number of hash slots of a Redis Cluster.
const ClusterSlots = 16384

// Cluster is a running Redis Cluster of real redis-server processes, each on
// free loopback ports (client and cluster bus) in its own temporary
// directory, formed with redis-cli --cluster create. Every process is
// killed when the test ends.
type Cluster struct {
	t         testing.TB
	serverBin string
	cliBin    string
	primaries int
	replicas  int
	timeout   time.Duration
	args      []string
	nodes     []*ClusterNode
	byAddr    map[string]*ClusterNode
	ports     map[int]bool
}

// ClusterNode is one redis-server of a Cluster. It keeps its ports, its
// directory and its nodes.conf across Stop/Kill and Restart, so a restarted
// node rejoins the cluster as itself.
type ClusterNode struct {
	c       *Cluster
	dir     string
	port    int
	busPort int
	id      string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// ClusterOption adjusts a cluster's shape or its nodes' configuration.
type ClusterOption func(*Cluster)

// WithPrimaries sets how many primaries share the 16384 slots (default 3,
// the least redis-cli --cluster create accepts).
func WithPrimaries(n int) ClusterOption { return func(c *Cluster) { c.primaries = n } }

// WithReplicas sets how many replicas each primary gets (default 0).
func WithReplicas(r int) ClusterOption { return func(c *Cluster) { c.replicas = r } }

// WithNodeTimeout sets cluster-node-timeout (default 2s): how long a node
// may be unreachable before it is failed, and a replica promoted.
func WithNodeTimeout(d time.Duration) ClusterOption { return func(c *Cluster) { c.timeout = d } }

// WithNodeArgs adds redis-server command-line arguments to every node.
func WithNodeArgs(args ...string) ClusterOption {
	return func(c *Cluster) { c.args = append(c.args, args...) }
}

// StartCluster starts a Redis Cluster for t: the primaries (3 unless
// WithPrimaries says otherwise) and WithReplicas replicas of each, formed
// with redis-cli --cluster create, and returns once every node reports
// cluster_state:ok, all 16384 slots are covered, every node agrees on who
// serves them, and every replica's link to its primary is up. A missing
// redis-server or redis-cli fails the test with the install hint.
func StartCluster(t testing.TB, opts ...ClusterOption) *Cluster {
	t.Helper()
	serverBin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(ClusterInstallHint)
	}
	cliBin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal(ClusterInstallHint)
	}
	c := &Cluster{
		t: t, serverBin: serverBin, cliBin: cliBin,
		primaries: 3, timeout: 2 * time.Second,
		byAddr: map[string]*ClusterNode{}, ports: map[int]bool{},
	}
	for _, o := range opts {
		o(c)
	}
	if c.primaries < 3 {
		t.Fatalf("redistest: a cluster needs at least 3 primaries, not %d", c.primaries)
	}
	if c.replicas < 0 {
		t.Fatalf("redistest: %d replicas per primary", c.replicas)
	}
	total := c.primaries * (1 + c.replicas)
	for i := 0; i < total; i++ {
		c.nodes = append(c.nodes, &ClusterNode{c: c, dir: t.TempDir()})
	}
	t.Cleanup(c.killAll)

	// Launch every process, then wait for each; a node whose process dies
	// at once (a port taken between picking and binding) gets fresh ports.
	for _, n := range c.nodes {
		n.pickPorts()
		n.launch()
	}
	for _, n := range c.nodes {
		for attempt := 1; ; attempt++ {
			err := n.awaitUp(10 * time.Second)
			if err == nil {
				break
			}
			if attempt == 5 {
				t.Fatalf("redistest: cluster node in %s did not start: %v", n.dir, err)
			}
			n.kill()
			n.pickPorts()
			n.launch()
		}
		c.byAddr[n.Addr()] = n
	}

	args := []string{"--cluster", "create"}
	for _, n := range c.nodes {
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(c.replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	out, err := exec.CommandContext(ctx, c.cliBin, args...).CombinedOutput()
	cancel()
	if err != nil {
		t.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, n := range c.nodes {
		id, err := n.Do("CLUSTER", "MYID")
		if err != nil {
			t.Fatalf("redistest: CLUSTER MYID on %s: %v", n.Addr(), err)
		}
		n.id = id
	}
	c.WaitHealthy()
	return c
}

// Addrs returns host:port of every node in creation order: the primaries
// first (redis-cli --cluster create makes the first addresses it is given
// primaries), then the replicas. Pass them as
// rueidis.ClientOption.InitAddress. After a failover or a restart, ask
// Primaries and ReplicasOf for the roles.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes returns every node, in the order of Addrs.
func (c *Cluster) Nodes() []*ClusterNode { return append([]*ClusterNode(nil), c.nodes...) }

// Node returns the node at addr; an unknown address fails the test.
func (c *Cluster) Node(addr string) *ClusterNode {
	c.t.Helper()
	n, ok := c.byAddr[addr]
	if !ok {
		c.t.Fatalf("redistest: no cluster node at %s", addr)
	}
	return n
}

// Do sends one command to the node at addr on a fresh connection and
// returns the reply as text (an array's elements one a line, flattened);
// for test setup and inspection only.
func (c *Cluster) Do(addr string, args ...string) (string, error) { return do(addr, args...) }

// Primaries returns the addresses of the nodes that are primaries serving
// slots now, as the running nodes agree, in Addrs order.
func (c *Cluster) Primaries() []string {
	c.t.Helper()
	v := c.agreedView()
	var out []string
	for _, n := range c.nodes {
		if e, ok := v.byAddr[n.Addr()]; ok && e.primary() && len(e.slots) > 0 {
			out = append(out, n.Addr())
		}
	}
	return out
}

// ReplicasOf returns the addresses of the replicas of the primary at addr,
// as the running nodes agree.
func (c *Cluster) ReplicasOf(addr string) []string {
	c.t.Helper()
	v := c.agreedView()
	p, ok := v.byAddr[addr]
	if !ok {
		c.t.Fatalf("redistest: no cluster node at %s", addr)
	}
	var out []string
	for _, e := range v.entries {
		if e.master == p.id {
			out = append(out, e.addr)
		}
	}
	sort.Strings(out)
	return out
}

// KeySlot returns the hash slot of key, as the server computes it (CLUSTER
// KEYSLOT).
func (c *Cluster) KeySlot(key string) int {
	c.t.Helper()
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		s, err := n.Do("CLUSTER", "KEYSLOT", key)
		if err != nil {
			c.t.Fatalf("redistest: CLUSTER KEYSLOT %s: %v", key, err)
		}
		slot, _ := strconv.Atoi(s)
		return slot
	}
	c.t.Fatal("redistest: no cluster node is running")
	return -1
}

// NodeForSlot returns the address of the primary serving slot, once every
// running node agrees on it (it waits for gossip to settle, up to 10s).
func (c *Cluster) NodeForSlot(slot int) string {
	c.t.Helper()
	if slot < 0 || slot >= ClusterSlots {
		c.t.Fatalf("redistest: slot %d is out of range", slot)
	}
	v := c.agreedView()
	addr := v.owner(slot)
	if addr == "" {
		c.t.Fatalf("redistest: no node serves slot %d", slot)
	}
	return addr
}

// NodeForKey returns the address of the primary serving key's slot.
func (c *Cluster) NodeForKey(key string) string {
	c.t.Helper()
	return c.NodeForSlot(c.KeySlot(key))
}

// CountKeysInSlot returns how many keys of slot the node at addr holds.
func (c *Cluster) CountKeysInSlot(addr string, slot int) int {
	c.t.Helper()
	s, err := do(addr, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
	if err != nil {
		c.t.Fatalf("redistest: CLUSTER COUNTKEYSINSLOT %d on %s: %v", slot, addr, err)
	}
	k, _ := strconv.Atoi(s)
	return k
}

// Kill kills the node at addr with SIGKILL (no shutdown, nothing saved).
// The cluster fails it after the node timeout, and promotes a replica if it
// was a primary with one.
func (c *Cluster) Kill(addr string) {
	c.t.Helper()
	c.Node(addr).kill()
}

// Stop shuts the node at addr down with SIGTERM and waits for it to exit.
func (c *Cluster) Stop(addr string) {
	c.t.Helper()
	n := c.Node(addr)
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		n.kill()
	}
	n.mu.Lock()
	n.cmd = nil
	n.mu.Unlock()
}

// Restart starts the node at addr again on its ports and directory,
// killing it first if it runs; it rejoins the cluster from its nodes.conf
// (with an empty dataset: nodes save nothing). Restart returns once the
// node answers and, when every node is running, once the cluster is
// healthy again (WaitHealthy).
func (c *Cluster) Restart(addr string) {
	c.t.Helper()
	n := c.Node(addr)
	n.kill()
	n.launch()
	if err := n.awaitUp(10 * time.Second); err != nil {
		c.t.Fatalf("redistest: restarting %s: %v", addr, err)
	}
	for _, m := range c.nodes {
		if !m.Running() {
			return
		}
	}
	c.WaitHealthy()
}

// WaitHealthy waits (up to 20s) until every running node reports
// cluster_state:ok with all 16384 slots assigned and ok, the running nodes
// agree on who serves every slot and who replicates whom and flag none of
// each other as failing, no slot is migrating or importing, and every
// running replica's link to its primary is up. It fails the test with the
// last thing found wrong.
func (c *Cluster) WaitHealthy() {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := c.healthy()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("redistest: the cluster is not healthy after 20s: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (c *Cluster) healthy() error {
	var first string
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		info, err := n.Do("CLUSTER", "INFO")
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", n.Addr(), err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384"} {
			if !strings.Contains(info, want+"\r\n") {
				return fmt.Errorf("%s: CLUSTER INFO lacks %s:\n%s", n.Addr(), want, info)
			}
		}
		v, err := n.view()
		if err != nil {
			return err
		}
		for _, m := range c.nodes {
			if !m.Running() {
				continue
			}
			e, ok := v.byAddr[m.Addr()]
			if !ok {
				return fmt.Errorf("%s does not know %s yet", n.Addr(), m.Addr())
			}
			if e.has("fail") || e.has("fail?") || e.has("handshake") || e.has("noaddr") {
				return fmt.Errorf("%s flags %s %s", n.Addr(), m.Addr(), strings.Join(e.flags, ","))
			}
		}
		if v.open != "" {
			return fmt.Errorf("%s has an open slot: %s", n.Addr(), v.open)
		}
		if first == "" {
			first = v.layout
		} else if v.layout != first {
			return fmt.Errorf("the nodes disagree on the slots or the replicas:\n%s\n---\n%s", first, v.layout)
		}
		if me := v.byAddr[n.Addr()]; me != nil && !me.primary() {
			repl, err := n.Do("INFO", "replication")
			if err != nil {
				return err
			}
			if !strings.Contains(repl, "master_link_status:up") {
				return fmt.Errorf("replica %s: master link not up", n.Addr())
			}
		}
	}
	if first == "" {
		return fmt.Errorf("no node is running")
	}
	return nil
}

// MigrateOptions tune MigrateSlotWith.
type MigrateOptions struct {
	// Batch is how many keys one MIGRATE moves (default 10).
	Batch int
	// Pause is slept after each batch, so that clients working on the slot
	// meet it half moved (ASK, TRYAGAIN).
	Pause time.Duration
	// AfterBatch, when set, is called after each batch with the keys moved
	// so far; the slot is half moved while it runs.
	AfterBatch func(moved int)
	// Timeout is MIGRATE's timeout (default 5s).
	Timeout time.Duration
}

// MigrateSlot moves slot from the primary at from to the primary at to
// with the resharding procedure redis-cli uses, and returns how many keys
// it moved. See MigrateSlotWith.
func (c *Cluster) MigrateSlot(t testing.TB, slot int, from, to string) int {
	t.Helper()
	return c.MigrateSlotWith(t, slot, from, to, MigrateOptions{})
}

// MigrateSlotWith moves slot from the primary at from to the primary at to:
// CLUSTER SETSLOT IMPORTING on to, SETSLOT MIGRATING on from, then MIGRATE
// ... KEYS in batches of the keys CLUSTER GETKEYSINSLOT lists on from until
// none is left, then CLUSTER SETSLOT NODE on to, on from and on every other
// running primary. While it runs, clients asking from for a key already
// moved are sent to to with ASK (or told TRYAGAIN for a multi-key command
// whose keys are split); afterwards from answers MOVED. It returns once
// every running node agrees that to serves slot and no key of it is left on
// from; anything else fails t.
func (c *Cluster) MigrateSlotWith(t testing.TB, slot int, from, to string, o MigrateOptions) int {
	t.Helper()
	if o.Batch <= 0 {
		o.Batch = 10
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	src, dst := c.Node(from), c.Node(to)
	if src == dst {
		t.Fatalf("redistest: migrating slot %d from %s to itself", slot, from)
	}
	if owner := c.NodeForSlot(slot); owner != from {
		t.Fatalf("redistest: slot %d is served by %s, not %s", slot, owner, from)
	}
	must := func(n *ClusterNode, args ...string) string {
		t.Helper()
		r, err := n.Do(args...)
		if err != nil {
			t.Fatalf("redistest: %s on %s: %v", strings.Join(args, " "), n.Addr(), err)
		}
		return r
	}
	s := strconv.Itoa(slot)
	must(dst, "CLUSTER", "SETSLOT", s, "IMPORTING", src.id)
	must(src, "CLUSTER", "SETSLOT", s, "MIGRATING", dst.id)
	host, port, _ := net.SplitHostPort(to)
	moved := 0
	for {
		r := must(src, "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(o.Batch))
		if r == "" {
			break
		}
		keys := strings.Split(r, "\n")
		args := append([]string{"MIGRATE", host, port, "", "0", strconv.FormatInt(o.Timeout.Milliseconds(), 10), "KEYS"}, keys...)
		if r := must(src, args...); r != "OK" && r != "NOKEY" {
			t.Fatalf("redistest: MIGRATE of %d keys of slot %d answered %q", len(keys), slot, r)
		}
		moved += len(keys)
		if o.AfterBatch != nil {
			o.AfterBatch(moved)
		}
		if o.Pause > 0 {
			time.Sleep(o.Pause)
		}
	}
	must(dst, "CLUSTER", "SETSLOT", s, "NODE", dst.id)
	must(src, "CLUSTER", "SETSLOT", s, "NODE", dst.id)
	for _, n := range c.nodes {
		if n == src || n == dst || !n.Running() {
			continue
		}
		v, err := n.view()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		if me := v.byAddr[n.Addr()]; me != nil && me.primary() {
			must(n, "CLUSTER", "SETSLOT", s, "NODE", dst.id)
		}
	}
	if left := c.CountKeysInSlot(from, slot); left != 0 {
		t.Fatalf("redistest: %d keys of slot %d were left behind on %s", left, slot, from)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := c.view()
		if err == nil && v.owner(slot) == to && v.open == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: the nodes do not agree that %s serves slot %d after 10s (%v)", to, slot, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return moved
}

// Addr returns host:port of the node.
func (n *ClusterNode) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.port)) }

// BusAddr returns host:port of the node's cluster bus.
func (n *ClusterNode) BusAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.busPort))
}

// ID returns the node's cluster node id (CLUSTER MYID), kept across restarts.
func (n *ClusterNode) ID() string { return n.id }

// Dir returns the node's working directory (nodes.conf, redis.log).
func (n *ClusterNode) Dir() string { return n.dir }

// Running reports whether the node's process is alive.
func (n *ClusterNode) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return false
	}
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// Do sends one command to the node on a fresh connection; see Cluster.Do.
func (n *ClusterNode) Do(args ...string) (string, error) { return do(n.Addr(), args...) }

func (n *ClusterNode) pickPorts() {
	n.c.t.Helper()
	for n.port = freePort(n.c.t); n.c.ports[n.port]; n.port = freePort(n.c.t) {
	}
	n.c.ports[n.port] = true
	for n.busPort = freePort(n.c.t); n.c.ports[n.busPort]; n.busPort = freePort(n.c.t) {
	}
	n.c.ports[n.busPort] = true
}

func (n *ClusterNode) launch() {
	n.c.t.Helper()
	args := append([]string{
		"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1", "--dir", n.dir,
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-port", strconv.Itoa(n.busPort),
		"--cluster-node-timeout", strconv.FormatInt(n.c.timeout.Milliseconds(), 10),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes",
		"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
		"--logfile", filepath.Join(n.dir, "redis.log"), "--daemonize", "no",
	}, n.c.args...)
	cmd := exec.Command(n.c.serverBin, args...)
	if err := cmd.Start(); err != nil {
		n.c.t.Fatalf("redistest: starting redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
}

// awaitUp waits until the node's own process answers on its port: PING,
// then INFO's process_id, so that a stranger on a reused port is not taken
// for it.
func (n *ClusterNode) awaitUp(limit time.Duration) error {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.mu.Unlock()
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(n.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s exited; its log:\n%s", n.Addr(), log)
		default:
		}
		if ping(n.Addr()) == nil {
			info, err := n.Do("INFO", "server")
			if err == nil && strings.Contains(info, "process_id:"+strconv.Itoa(cmd.Process.Pid)+"\r\n") {
				return nil
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(n.dir, "redis.log"))
			return fmt.Errorf("redis-server on %s did not answer in %v; its log:\n%s", n.Addr(), limit, log)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (n *ClusterNode) kill() {
	n.mu.Lock()
	cmd, exited := n.cmd, n.exited
	n.cmd = nil
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

func (c *Cluster) killAll() {
	for _, n := range c.nodes {
		n.kill()
	}
}

// nodeEntry is one line of CLUSTER NODES.
type nodeEntry struct {
	id, addr, master string
	flags            []string
	slots            []string // ranges such as 0-5460 or 5461
}

func (e *nodeEntry) has(flag string) bool {
	for _, f := range e.flags {
		if f == flag {
			return true
		}
	}
	return false
}

func (e *nodeEntry) primary() bool { return e.has("master") }

// clusterView is one node's CLUSTER NODES.
type clusterView struct {
	entries []*nodeEntry
	byAddr  map[string]*nodeEntry
	layout  string // who serves which slots and who replicates whom, canonical, to compare views
	open    string // the viewer's migrating/importing slots, if any
}

func (v *clusterView) owner(slot int) string {
	for _, e := range v.entries {
		if !e.primary() {
			continue
		}
		for _, r := range e.slots {
			lo, hi, _ := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if hi != "" {
				b, _ = strconv.Atoi(hi)
			}
			if slot >= a && slot <= b {
				return e.addr
			}
		}
	}
	return ""
}

func (n *ClusterNode) view() (*clusterView, error) {
	text, err := n.Do("CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES on %s: %w", n.Addr(), err)
	}
	return parseNodes(text), nil
}

func parseNodes(text string) *clusterView {
	v := &clusterView{byAddr: map[string]*nodeEntry{}}
	var layout []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		e := &nodeEntry{id: f[0], addr: addr, flags: strings.Split(f[2], ","), master: f[3]}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				v.open += s
				continue
			}
			e.slots = append(e.slots, s)
		}
		v.entries = append(v.entries, e)
		v.byAddr[addr] = e
		switch {
		case e.primary() && len(e.slots) > 0:
			layout = append(layout, addr+" "+strings.Join(e.slots, " "))
		case e.has("slave"):
			layout = append(layout, addr+" replica of "+e.master)
		}
	}
	sort.Strings(layout)
	v.layout = strings.Join(layout, "\n")
	return v
}

// view returns the running nodes' common view (with every node's open
// slots), or an error when they disagree on the slots or the replicas.
func (c *Cluster) view() (*clusterView, error) {
	var first *clusterView
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		v, err := n.view()
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = v
			continue
		}
		if v.layout != first.layout {
			return nil, fmt.Errorf("the nodes disagree on the slots or the replicas:\n%s\n---\n%s", first.layout, v.layout)
		}
		first.open += v.open
	}
	if first == nil {
		return nil, fmt.Errorf("no node is running")
	}
	return first, nil
}

// agreedView waits (up to 10s) for the running nodes to agree.
func (c *Cluster) agreedView() *clusterView {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := c.view()
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("redistest: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
