package model

import (
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// realManifest is the repository's protocol.yaml, relative to this package.
const realManifest = "../../protocol.yaml"

var (
	realOnce  sync.Once
	realProto *Protocol
	realErr   error
)

// loadReal loads the real manifest once for the whole package's tests.
func loadReal(t testing.TB) *Protocol {
	t.Helper()
	realOnce.Do(func() { realProto, realErr = Load(realManifest) })
	if realErr != nil {
		t.Fatalf("load %s:\n%v", realManifest, realErr)
	}
	return realProto
}

func TestLoadRealManifest(t *testing.T) {
	p := loadReal(t)
	// The spec is 2.0.0; later minors of the line keep its major.
	if got := p.Version; got.Major != 2 || got.Compare(Semver{2, 0, 0}) < 0 {
		t.Errorf("version = %v, want 2.x at or above 2.0.0", got)
	}
	if got, want := p.VersionRecord(), "echomq:"+p.Version.String(); got != want {
		t.Errorf("VersionRecord() = %q, want %q", got, want)
	}
	if got, want := p.WorkKind().Name, "JOB"; got != want {
		t.Errorf("work kind = %q, want %q", got, want)
	}
	var kinds []string
	for _, k := range p.Kinds {
		kinds = append(kinds, k.Name)
	}
	if diff := cmp.Diff([]string{"ARC", "ORD", "JOB"}, kinds); diff != "" {
		t.Errorf("kinds mismatch (-want +got):\n%s", diff)
	}
	var classes []string
	for _, c := range p.Classes {
		classes = append(classes, c.Word)
	}
	if diff := cmp.Diff([]string{"EMQKIND", "EMQSTALE", "EMQPOLICY"}, classes); diff != "" {
		t.Errorf("wire classes mismatch (-want +got):\n%s", diff)
	}
	var members []string
	for _, m := range p.Reserve {
		members = append(members, m.Name)
	}
	if diff := cmp.Diff([]string{"version", "locks", "bundle", "migration:<queue>"}, members); diff != "" {
		t.Errorf("reserve mismatch (-want +got):\n%s", diff)
	}
	// The spec's ten scripts, with the signatures of its section 9.
	sigs := map[string][2][]string{
		"enqueue":    {{"row", "pending"}, {"id", "payload"}},
		"enqueue_at": {{"row", "schedule"}, {"id", "payload", "run_at_ms"}},
		"claim":      {{"pending", "active"}, {"prefix", "lease_ms"}},
		"extend":     {{"active", "row"}, {"id", "token", "lease_ms"}},
		"complete":   {{"active", "row"}, {"id", "token"}},
		"retry":      {{"active", "row", "schedule"}, {"id", "token", "delay_ms"}},
		"bury":       {{"active", "row", "dead"}, {"id", "token"}},
		"promote":    {{"schedule", "pending"}, {"prefix", "limit"}},
		"reap":       {{"active", "pending", "dead"}, {"prefix", "limit", "max_attempts"}},
		"revive":     {{"dead", "pending", "row"}, {"id"}},
	}
	for name, sig := range sigs {
		s, ok := p.Script(name)
		if !ok {
			t.Errorf("script %q is missing", name)
			continue
		}
		var keys, args []string
		for _, k := range s.Keys {
			keys = append(keys, k.Type)
		}
		for _, a := range s.Argv {
			args = append(args, a.Name)
		}
		if diff := cmp.Diff(sig, [2][]string{keys, args}); diff != "" {
			t.Errorf("script %q KEYS/ARGV mismatch (-want +got):\n%s", name, diff)
		}
	}
}

func TestParseIDSpecExamples(t *testing.T) {
	c := loadReal(t).IDs
	for _, tc := range []struct {
		id   string
		want DecodedID
	}{
		{"ORD0NgWEfAEJfs", DecodedID{Kind: "ORD", Time: time.Date(2026, 6, 3, 18, 56, 10, 164e6, time.UTC), Node: 0, Sequence: 0}},
		{"ORD0Nt6z93U3dY", DecodedID{Kind: "ORD", Time: time.Date(2026, 6, 11, 9, 1, 41, 949e6, time.UTC), Node: 7, Sequence: 0}},
	} {
		got, err := c.ParseID(tc.id)
		if err != nil {
			t.Errorf("ParseID(%q): %v", tc.id, err)
			continue
		}
		tc.want.Value = got.Value // checked by the round trip below
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseID(%q) mismatch (-want +got):\n%s", tc.id, diff)
		}
		if back := c.FormatID(got.Kind, got.Value); back != tc.id {
			t.Errorf("FormatID(ParseID(%q)) = %q", tc.id, back)
		}
	}
	for _, bad := range c.Invalid {
		if _, err := c.ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) succeeded; the manifest lists it as invalid", bad)
		}
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	c := loadReal(t).IDs
	rng := rand.New(rand.NewPCG(2024, 1))
	kinds := []string{"ARC", "ORD", "JOB", "AAA", "ZZZ"}
	for i := 0; i < 10000; i++ {
		v := rng.Uint64() >> 1 // a snowflake: top bit zero
		kind := kinds[rng.IntN(len(kinds))]
		id := c.FormatID(kind, v)
		if len(id) != c.Length {
			t.Fatalf("FormatID(%q, %d) = %q, %d bytes; want %d", kind, v, id, len(id), c.Length)
		}
		d, err := c.ParseID(id)
		if err != nil {
			t.Fatalf("ParseID(FormatID(%q, %d) = %q): %v", kind, v, id, err)
		}
		if d.Kind != kind || d.Value != v {
			t.Fatalf("ParseID(%q) = kind %q value %d, want %q %d", id, d.Kind, d.Value, kind, v)
		}
		ms := int64(v >> 22)
		if want := c.Epoch.Add(time.Duration(ms) * time.Millisecond); !d.Time.Equal(want) {
			t.Fatalf("ParseID(%q).Time = %v, want %v", id, d.Time, want)
		}
		if d.Node != int64(v>>12&0x3ff) || d.Sequence != int64(v&0xfff) {
			t.Fatalf("ParseID(%q) = node %d seq %d, want %d %d", id, d.Node, d.Sequence, v>>12&0x3ff, v&0xfff)
		}
	}
}

func TestByteOrderIsNumericOrder(t *testing.T) {
	c := loadReal(t).IDs
	rng := rand.New(rand.NewPCG(7, 11))
	cmpU := func(a, b uint64) int {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	cmpS := func(a, b string) int {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	for i := 0; i < 10000; i++ {
		a := rng.Uint64() >> 1
		b := rng.Uint64() >> 1
		if i%4 == 0 { // neighbours, where a carry crosses digits
			b = a + uint64(rng.IntN(100))
			if b > math.MaxInt64 {
				b = a
			}
		}
		x, y := c.FormatID("JOB", a), c.FormatID("JOB", b)
		if cmpS(x, y) != cmpU(a, b) {
			t.Fatalf("%d vs %d: ids %q vs %q order differently", a, b, x, y)
		}
	}
}

func TestSnowflakeBounds(t *testing.T) {
	c := loadReal(t).IDs
	maxID := c.FormatID("JOB", math.MaxInt64)
	if got, want := maxID, "JOBAzL8n0Y58m7"; got != want {
		t.Errorf("FormatID(JOB, 2^63-1) = %q, want %q", got, want)
	}
	d, err := c.ParseID(maxID)
	if err != nil {
		t.Fatalf("ParseID(%q): %v", maxID, err)
	}
	if d.Value != math.MaxInt64 {
		t.Errorf("ParseID(%q).Value = %d, want 2^63-1", maxID, d.Value)
	}
	over := c.FormatID("JOB", math.MaxInt64+1)
	if _, err := c.ParseID(over); err == nil {
		t.Errorf("ParseID(%q) (2^63) succeeded; it overflows the snowflake", over)
	}
	if _, err := c.ParseID("JOBzzzzzzzzzzz"); err == nil {
		t.Errorf("ParseID(JOBzzzzzzzzzzz) succeeded; it overflows 64 bits")
	}
	if got, want := c.FormatID("JOB", 0), "JOB00000000000"; got != want {
		t.Errorf("FormatID(JOB, 0) = %q, want %q", got, want)
	}
}

func TestParseSemver(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Semver
	}{
		{"0.0.0", Semver{0, 0, 0}},
		{"2.0.0", Semver{2, 0, 0}},
		{"1.3.0", Semver{1, 3, 0}},
		{"10.20.30", Semver{10, 20, 30}},
	} {
		got, err := ParseSemver(tc.in)
		if err != nil {
			t.Errorf("ParseSemver(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseSemver(%q) = %v, want %v", tc.in, got, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("ParseSemver(%q).String() = %q", tc.in, got.String())
		}
	}
	for _, bad := range []string{
		"", "2", "2.0", "2.0.0.0", "2..0", ".2.0", "2.0.",
		"02.0.0", "2.00.0", "2.0.01", // leading zeros
		"-1.0.0", "1.-1.0", "1.0.-1", "+1.0.0", // signs
		"v2.0.0", "2.0.0-rc1", "2.0.0+meta", " 2.0.0", "2.0.0 ", "a.b.c",
		"99999999999999999999.0.0", // overflows int
	} {
		if v, err := ParseSemver(bad); err == nil {
			t.Errorf("ParseSemver(%q) = %v, want an error", bad, v)
		}
	}
}

func TestSemverCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"2.0.0", "2.0.0", 0},
		{"1.3.0", "2.0.0", -1},
		{"2.0.0", "1.3.0", 1},
		{"2.1.0", "2.0.9", 1},
		{"2.0.9", "2.1.0", -1},
		{"2.0.1", "2.0.0", 1},
		{"2.0.0", "2.0.1", -1},
		{"10.0.0", "9.99.99", 1},
	} {
		a, b := mustSemver(t, tc.a), mustSemver(t, tc.b)
		if got := a.Compare(b); got != tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func mustSemver(t *testing.T, s string) Semver {
	t.Helper()
	v, err := ParseSemver(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// seedEnqueue is the enqueue body of the spec's section 9, verbatim from
// the seed.
const seedEnqueue = `if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
`

// The enqueue body is the seed's, verbatim, after one line: since 2.1.1
// every script first reads each of its KEYS with an O(1) command of the
// key's type ({{guard}}), so that a key of another type fails the script
// before the seed's first write. That line reads, never writes; the seed's
// behaviour is otherwise unchanged.
func TestEnqueueBodyIsTheSeed(t *testing.T) {
	s, ok := loadReal(t).Script("enqueue")
	if !ok {
		t.Fatal("no enqueue script")
	}
	guard, body, _ := strings.Cut(s.Body, "\n")
	if !strings.HasPrefix(guard, "redis.call('HLEN', KEYS[1]); redis.call('ZCARD', KEYS[2])") {
		t.Errorf("enqueue does not open with the type reads of its keys: %q", guard)
	}
	if diff := cmp.Diff(seedEnqueue, body); diff != "" {
		t.Errorf("enqueue body differs from the seed (-want +got):\n%s", diff)
	}
}

var slotRE = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+)\]`)

// groupRE finds a repeated group addressed from its first index:
// KEYS[3 + i - 1], ARGV[2 + at], or a loop for i = 2, #ARGV.
var groupRE = regexp.MustCompile(`\b(KEYS|ARGV)\[(\d+) [+-] |= (\d+), #(KEYS|ARGV)\b`)

func TestBodiesStayWithinTheirSlots(t *testing.T) {
	for _, s := range loadReal(t).Scripts {
		if s.Body == "" {
			t.Errorf("script %q renders an empty body", s.Name)
			continue
		}
		limit := map[string]int{"KEYS": len(s.Keys), "ARGV": len(s.Argv)}
		used := map[string]map[int]bool{"KEYS": {}, "ARGV": {}}
		for _, m := range slotRE.FindAllStringSubmatch(s.Body, -1) {
			i, _ := strconv.Atoi(m[2])
			if i < 1 || i > limit[m[1]] {
				t.Errorf("script %q uses %s[%d]; it declares %d", s.Name, m[1], i, limit[m[1]])
			}
			used[m[1]][i] = true
		}
		for _, m := range groupRE.FindAllStringSubmatch(s.Body, -1) {
			which, n := m[1], m[2]
			if which == "" {
				which, n = m[4], m[3]
			}
			i, _ := strconv.Atoi(n)
			group := (which == "KEYS" && i >= 1 && i <= len(s.Keys) && s.Keys[i-1].Repeated) ||
				(which == "ARGV" && i >= 1 && i <= len(s.Argv) && s.Argv[i-1].Repeated)
			if !group {
				t.Errorf("script %q addresses %s[%d] as a repeated group; it is not one", s.Name, which, i)
			}
			used[which][i] = true
		}
		for which, n := range limit {
			for i := 1; i <= n; i++ {
				if !used[which][i] {
					t.Errorf("script %q never uses %s[%d]", s.Name, which, i)
				}
			}
		}
		if regexp.MustCompile(`\{\{|\}\}`).MatchString(s.Body) {
			t.Errorf("script %q's body keeps template braces:\n%s", s.Name, s.Body)
		}
	}
}

func TestShapes(t *testing.T) {
	p := loadReal(t)
	version, _ := p.Member("version")
	migration, ok := p.Member("migration")
	if !ok {
		t.Fatal("no migration member")
	}
	enqueue, _ := p.Script("enqueue")
	fence, _ := p.Script("fence")
	queue, _ := p.KeyClass("queue")
	for _, tc := range []struct{ got, want string }{
		{p.TypeShape("pending"), "emq:{<queue>}:pending"},
		{p.TypeShape("row"), "emq:{<queue>}:job:<id>"},
		{p.MemberShape(version), "{emq}:version"},
		{p.MemberShape(migration), "{emq}:migration:<queue>"},
		{p.KeyShape(enqueue.Keys[0]), "emq:{<queue>}:job:<id>"},
		{p.KeyShape(enqueue.Keys[1]), "emq:{<queue>}:pending"},
		{p.KeyShape(fence.Keys[0]), "{emq}:version"},
		{Shape(queue.Parts, map[string]string{"queue": "orders", "type": "pending"}), "emq:{orders}:pending"},
	} {
		if tc.got != tc.want {
			t.Errorf("shape = %q, want %q", tc.got, tc.want)
		}
	}
}

func TestQueuePatternMaxLen(t *testing.T) {
	p := loadReal(t)
	n, err := regexpMaxLen(p.Queues.Pattern)
	if err != nil {
		t.Fatal(err)
	}
	if n != 64 {
		t.Errorf("regexpMaxLen(%q) = %d, want 64", p.Queues.Pattern, n)
	}
	if p.Queues.MaxLength != 64 {
		t.Errorf("Queues.MaxLength = %d, want 64", p.Queues.MaxLength)
	}
	for _, tc := range []struct {
		pattern string
		want    int
	}{
		{"abc", 3},
		{"a|bcd", 3},
		{"[a-z]{2,5}", 5},
		{"(ab)?c", 3},
		{"a*", -1},
		{"a+b", -1},
		{"[a-z]{0,63}x", 64},
		{"é", 2},
	} {
		if got, err := regexpMaxLen(tc.pattern); err != nil || got != tc.want {
			t.Errorf("regexpMaxLen(%q) = %d, %v; want %d", tc.pattern, got, err, tc.want)
		}
	}
}

// errLineRE is the shape of every line of a manifest error: a position, or
// for whole-file problems the file alone.
var errLineRE = regexp.MustCompile(`^protocol\.yaml(:\d+:\d+)?: \S`)

// TestErrorsStayOnOneLine edits the real manifest so that names and
// patterns carry raw line breaks, which messages quote back: each problem
// must still print on one line of its own.
func TestErrorsStayOnOneLine(t *testing.T) {
	real, err := os.ReadFile(realManifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range [][2]string{
		{`pattern: "[a-z0-9][a-z0-9_.-]{0,63}"`, `pattern: "[a-z0-9\n"`},
		{`pattern: "[A-Z]{3}"`, `pattern: "[A-Z\n"`},
		{`"probe:${queue}"]`, `"probe:${que\nue}"]`},
		{"    - key: dead\n", "    - key: \"de\\nad\"\n"},
		{"  - word: EMQKIND\n", "  - word: \"EMQ\\r\\nKIND\"\n"},
	} {
		if !strings.Contains(string(real), edit[0]) {
			t.Fatalf("the manifest has no %q to edit", edit[0])
		}
		data := strings.Replace(string(real), edit[0], edit[1], 1)
		_, err := Parse("protocol.yaml", []byte(data))
		if err == nil {
			t.Errorf("edit %q: the manifest loads; it must be refused", edit[1])
			continue
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !errLineRE.MatchString(line) {
				t.Errorf("edit %q: line %q is not protocol.yaml:line:col: message", edit[1], line)
			}
		}
	}
}
