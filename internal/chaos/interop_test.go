package chaos

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/echomq/echomq/internal/literalscan"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/emq"
)

// TestInteropQuick runs Go, TypeScript and Python producers and worker
// processes on one queue while worker processes of every language are
// SIGKILLed and frozen: nothing lost or finished twice (runQuick), jobs
// completed across every pair of languages, late completions refused
// across languages, every cross-language stale check passed. It needs
// node and the built TypeScript SDK, and the Python SDK's virtual
// environment (./test.sh makes both first), and fails with the install
// hint without them.
func TestInteropQuick(t *testing.T) {
	res := runQuick(t, "interop")
	for _, k := range []string{"kills_go", "kills_ts", "kills_py", "freezes_go", "freezes_ts", "freezes_py", "workers_go", "workers_ts", "workers_py", "reaped"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims", k)
		}
	}
	for _, pr := range langPairs(interopLangs) {
		if k := string(pr[0]) + "_to_" + string(pr[1]); res.Counts[k] == 0 {
			t.Errorf("completed across languages: %s pushed by %s and completed by %s; want > 0 (counts %v)", k, langName(pr[0]), langName(pr[1]), res.Counts)
		}
	}
	if res.Counts["stale_cross"] == 0 {
		t.Errorf("no late completion was refused across languages (within a language: %d)", res.Counts["stale_same"])
	}
	if res.StaleRefused == 0 {
		t.Error("no stale completion was refused")
	}
	if n := int64(len(langPairs(interopLangs))); res.Counts["stale_probes"] != n {
		t.Errorf("%d of %d cross-language stale checks passed", res.Counts["stale_probes"], n)
	}
}

// TestCrossStale: a job claimed by one SDK whose lease expired, reaped and
// claimed again by another SDK, is completed late by the first: refused
// with its typed stale error; the new holder completes it. Every ordered
// pair of Go, TypeScript and Python: both directions of each.
func TestCrossStale(t *testing.T) {
	t.Parallel() // paced by its own schedule, on its own servers (see runQuick)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, q, sdks, drivers, stop, err := startStaleServer(ctx, t.TempDir(), interopLangs)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pairs := langPairs(interopLangs)
	if len(pairs) != 6 {
		t.Fatalf("%d ordered pairs of %v; want 6", len(pairs), interopLangs)
	}
	for _, pr := range pairs {
		if err := crossStale(ctx, c, q, sdks[pr[0]], sdks[pr[1]]); err != nil {
			t.Errorf("%s first, then %s: %v", pr[0], pr[1], err)
		}
	}
	// The harness's own check of the check: completing with a current
	// token is accepted, so a refusal above is the fence, not a broken
	// client; completing twice is refused.
	for _, lang := range []Lang{LangTS, LangPy} {
		d := drivers[lang]
		id, err := c.Mint(emq.WorkKind)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Push(ctx, id, []byte("x")); err != nil {
			t.Fatal(err)
		}
		gotID, tok, ok, err := d.Claim(ctx, q.Name(), time.Minute)
		if err != nil || !ok || gotID != id.String() {
			t.Fatalf("%s claim: %s %d %v %v", langName(lang), gotID, tok, ok, err)
		}
		if err := d.Complete(ctx, q.Name(), gotID, tok); err != nil {
			t.Errorf("%s complete with the current token: %v", langName(lang), err)
		}
		if err := d.Complete(ctx, q.Name(), gotID, tok); err == nil {
			t.Errorf("%s complete of a completed job was accepted", langName(lang))
		} else if err := staleRefusal(lang, err); err != nil {
			t.Errorf("%s complete of a completed job: %v", langName(lang), err)
		}
	}
}

// TestNoProtocolLiteralsTS scans the TypeScript chaos programs
// (sdk/ts/chaos) for protocol literals: they use the SDK's generated
// names.
func TestNoProtocolLiteralsTS(t *testing.T) {
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../sdk/ts/chaos/*.ts")
	if len(files) < 2 {
		t.Fatalf("found %d TypeScript chaos programs under sdk/ts/chaos; want the worker and the driver", len(files))
	}
	literalscan.ScanQuotes(t, literalscan.Literals(p), files, []string{`"`, `'`, "`"}, "use the name exported by sdk/ts/src/gen")
}

// TestNoProtocolLiteralsPython scans the Python chaos programs
// (sdk/python/chaos) for protocol literals: they use the names of package
// echomq.
func TestNoProtocolLiteralsPython(t *testing.T) {
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("../../sdk/python/chaos/*.py")
	if len(files) < 2 {
		t.Fatalf("found %d Python chaos programs under sdk/python/chaos; want the worker and the driver", len(files))
	}
	literalscan.ScanPython(t, literalscan.Literals(p), files, "use the name exported by echomq")
}
