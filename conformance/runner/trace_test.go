package runner

import (
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
)

// feed builds MONITOR lines as the server writes them: a marker line per
// step, then each command of the step from client addr.
type feed struct {
	lines []string
}

func (f *feed) add(client string, args ...string) {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(a) + `"`
	}
	f.lines = append(f.lines, "1764770000.000001 [0 "+client+"] "+strings.Join(q, " "))
}

func (f *feed) mark(step string) { f.add("127.0.0.1:1", "ECHO", traceMarker+step) }

func traceFixture(t *testing.T) (*tracer, *bundle.Bundle, *model.Protocol) {
	t.Helper()
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := newTracer(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	return tr, b, p
}

func TestParseMonitorLine(t *testing.T) {
	ml, ok := parseMonitorLine(`1764770000.000001 [0 127.0.0.1:5555] "EVALSHA" "ab" "1" "k\"1" "a\\b" "\x00\xff\n"`)
	if !ok || ml.client != "127.0.0.1:5555" {
		t.Fatalf("parse = %+v, %v", ml, ok)
	}
	want := []string{"EVALSHA", "ab", "1", `k"1`, `a\b`, "\x00\xff\n"}
	if strings.Join(ml.args, "|") != strings.Join(want, "|") {
		t.Errorf("args %q, want %q", ml.args, want)
	}
	if ml, _ := parseMonitorLine(`1764770000.000001 [0 lua] "ZCARD" "k"`); ml.client != "lua" {
		t.Errorf("a script's own command: client %q, want lua", ml.client)
	}
}

// TestTraceComparisonNamesTheStep: two languages send the same script
// calls but for one argument order at one step, and the comparison
// reports exactly that step, after NOSCRIPT misses, ids minted by each
// testee, the clock, random draws and the fence/lease upkeep are
// normalised away.
func TestTraceComparisonNamesTheStep(t *testing.T) {
	tr, b, p := traceFixture(t)
	push, _ := b.Script("push")
	fence, _ := b.Script("fence")
	fail, ok := b.Script("fail")
	if !ok || len(tr.random["fail"]) == 0 {
		t.Fatalf("fail's random draw (its jitter) is not found from the manifest: %v", tr.random)
	}
	reserve, _ := p.KeyClass("reserve")
	now := int64(1764770000000)
	work := p.WorkKind().Name
	run := func(id string, swap bool, clock string, noscript bool) ([]string, map[string][]string) {
		var f feed
		f.mark("scenarios/x/y 0")
		f.add("127.0.0.1:9", "EVALSHA", fence.SHA1, "1", reserve.Parts[0].Lit+"version", "node:"+id) // upkeep
		if noscript {
			f.add("127.0.0.1:9", "EVALSHA", push.SHA1, "1", "emq:{q}:job:"+id, id, "p")
			f.add("127.0.0.1:7", "EVAL", push.Source, "1", "emq:{q}:job:"+id, id, "p")
		} else {
			f.add("127.0.0.1:9", "EVALSHA", push.SHA1, "1", "emq:{q}:job:"+id, id, "p")
		}
		f.mark("scenarios/x/y 1")
		args := []string{id, "2", "error"}
		if swap {
			args[1], args[2] = args[2], args[1]
		}
		jitter := make([]string, 0, len(args)+8)
		jitter = append(jitter, args...)
		for len(jitter) <= tr.random["fail"][0] {
			jitter = append(jitter, clock)
		}
		jitter[tr.random["fail"][0]] = clock[len(clock)-3:] // a draw of its own
		f.add("127.0.0.1:9", append([]string{"EVALSHA", fail.SHA1, "1", "emq:{q}:job:" + id}, jitter...)...)
		f.mark("end")
		steps, gaps := tr.steps(f.lines, map[string]bool{"127.0.0.1:1": true}, now)
		if len(gaps) != 0 {
			t.Fatalf("gaps %v in a feed without one", gaps)
		}
		return f.lines, steps
	}
	id1 := p.IDs.FormatID(work, 1<<40)
	id2 := p.IDs.FormatID(work, 2<<40)
	_, goTrace := run(id1, false, "1764770000123", false)
	_, same := run(id2, false, "1764770000456", true)
	_, swapped := run(id2, true, "1764770000789", false)
	if len(goTrace["scenarios/x/y 0"]) != 1 || !strings.HasPrefix(goTrace["scenarios/x/y 0"][0], "push ") {
		t.Fatalf("step 0 = %q; want the push alone (the fence is upkeep)", goTrace["scenarios/x/y 0"])
	}
	results := []*Result{{Language: "go", trace: goTrace}, {Language: "ts", trace: same}, {Language: "python", trace: swapped}}
	diffs := compareTraces(results)
	if len(diffs) != 1 {
		t.Fatalf("%d diffs, want 1 (python's step 1): %v", len(diffs), diffs)
	}
	d := diffs[0]
	if d.Language != "python" || d.Case != "scenarios/x/y" || d.Step != 1 || !strings.Contains(d.String(), "scenarios/x/y step 1") {
		t.Errorf("diff = %s; want python at scenarios/x/y step 1", d)
	}
}
