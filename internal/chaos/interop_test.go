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

// TestInteropQuick runs Go and TypeScript producers and worker processes
// on one queue while worker processes of both languages are SIGKILLed and
// frozen: nothing lost or finished twice (runQuick), jobs completed across
// languages both ways, late completions refused across languages, both
// cross-language stale checks passed. It needs node and the built
// TypeScript SDK (./test.sh builds sdk/ts first) and fails with the
// install hint without them.
func TestInteropQuick(t *testing.T) {
	res := runQuick(t, "interop")
	for _, k := range []string{"kills_go", "kills_ts", "freezes", "workers_go", "workers_ts", "reaped"} {
		if res.Counts[k] == 0 {
			t.Errorf("count %s is 0: the scenario did not exercise what it claims", k)
		}
	}
	if res.Counts["go_to_ts"] == 0 || res.Counts["ts_to_go"] == 0 {
		t.Errorf("completed across languages: Go to TypeScript %d, TypeScript to Go %d; want both > 0", res.Counts["go_to_ts"], res.Counts["ts_to_go"])
	}
	if res.Counts["stale_cross"] == 0 {
		t.Errorf("no late completion was refused across languages (within a language: %d)", res.Counts["stale_same"])
	}
	if res.StaleRefused == 0 {
		t.Error("no stale completion was refused")
	}
	if res.Counts["stale_probes"] != 2 {
		t.Errorf("%d of 2 cross-language stale checks passed", res.Counts["stale_probes"])
	}
}

// TestCrossStale: a job claimed by one SDK whose lease expired, reaped and
// claimed again by the other SDK, is completed late by the first: refused
// with its typed stale error; the new holder completes it.
func TestCrossStale(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, q, ts, stop, err := startStaleServer(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, first := range []Lang{LangTS, LangGo} {
		if err := crossStale(ctx, c, q, ts, first); err != nil {
			t.Errorf("%s first: %v", first, err)
		}
	}
	// The harness's own check of the check: completing with a current
	// token is accepted, so a refusal above is the fence, not a broken
	// client.
	id, err := c.Mint(emq.WorkKind)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Push(ctx, id, []byte("x")); err != nil {
		t.Fatal(err)
	}
	gotID, tok, ok, err := ts.Claim(ctx, q.Name(), time.Minute)
	if err != nil || !ok || gotID != id.String() {
		t.Fatalf("TypeScript claim: %s %d %v %v", gotID, tok, ok, err)
	}
	if err := ts.Complete(ctx, q.Name(), gotID, tok); err != nil {
		t.Errorf("TypeScript complete with the current token: %v", err)
	}
	if err := ts.Complete(ctx, q.Name(), gotID, tok); err == nil {
		t.Error("TypeScript complete of a completed job was accepted")
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
