package chaos

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReportWrite checks the report's header, its table and its sections,
// including a scenario whose figures the protocol does not promise and
// one that did not run to a verdict.
func TestReportWrite(t *testing.T) {
	rep := &Report{
		Date: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), Machine: "linux/amd64, 2 CPUs", Redis: "Redis server v=7.0.15",
		Go: "go1.26", Command: "go run ./cmd/emqchaos -seed 7", Seed: 7,
		Results: []Result{
			{Scenario: "crashing workers", Load: "5,000 jobs", Faults: "3 SIGKILLs", Acknowledged: 5000, Finished: 5000,
				StaleRefused: 12, Promised: true, Notes: "a | b", Seed: 7, Took: 20 * time.Second,
				Counts: map[string]int64{"kills": 3}, Details: "**Injected.** kills."},
			{Scenario: "failover", Load: "1,000 jobs", Faults: "1 failover", Acknowledged: 1000, Finished: 990, Lost: 10,
				Promised: false, Violations: []string{"queue q, job J: broken"}},
		},
		Failed: map[string]error{"pause": errors.New("no server")},
	}
	var b strings.Builder
	if err := rep.Write(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		GeneratedMarker + "\n",
		"| date | 2026-01-02 03:04 UTC |",
		"| command | `go run ./cmd/emqchaos -seed 7` |",
		"| seed | 7 (",
		"| crashing workers | 5,000 jobs | 3 SIGKILLs | 5,000 | 5,000 | 0 | 0 | 12 | yes | a \\| b |",
		"| failover | 1,000 jobs | 1 failover | 1,000 | 990 | 10 (not promised) | 0 | 0 | no | **1 invariant violations** (see below); |",
		"| pause | | | | | | | | | **did not run to a verdict**: no server |",
		"## crashing workers\n\n**Injected.** kills.",
		"Harness counts: kills 3.",
		"The protocol does not promise lost = finished twice = 0 under this fault",
		"- queue q, job J: broken",
		"**Invariant violations.** None.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasPrefix(got, GeneratedMarker) {
		t.Error("the report does not start with the generated marker")
	}
}

type fakeScenario string

func (f fakeScenario) Name() string                              { return string(f) }
func (fakeScenario) Run(context.Context, Config) (Result, error) { return Result{}, nil }

// TestRegistry: the known scenarios come first in their order, others by
// name; a name registered twice panics.
func TestRegistry(t *testing.T) {
	saved := registry
	defer func() { registry = saved }()
	registry = nil
	for _, n := range []string{"zeta", "pause", "alpha", "workers", "failover", "restarts"} {
		Register(fakeScenario(n))
	}
	var names []string
	for _, s := range Scenarios() {
		names = append(names, s.Name())
	}
	if want := []string{"workers", "restarts", "pause", "failover", "alpha", "zeta"}; !slices.Equal(names, want) {
		t.Errorf("Scenarios() = %v, want %v", names, want)
	}
	if Lookup("alpha") == nil || Lookup("nope") != nil {
		t.Error("Lookup")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a name twice did not panic")
		}
	}()
	Register(fakeScenario("pause"))
}

// TestThousands formats counts.
func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 100000: "100,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
