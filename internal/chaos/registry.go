package chaos

import (
	"fmt"
	"slices"
	"sync"
)

var (
	registryMu sync.Mutex
	registry   []Scenario
)

// order is the reading order of the known scenarios in the report; other
// scenarios follow by name.
var order = []string{"workers", "restarts", "pause", "failover", "interop", "mixed", "mixed23", "reshard"}

// Register adds a scenario to the registry cmd/emqchaos runs; a file of
// this package registers its scenario from init. A name registered twice
// panics.
func Register(s Scenario) {
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, r := range registry {
		if r.Name() == s.Name() {
			panic(fmt.Sprintf("chaos: scenario %q registered twice", s.Name()))
		}
	}
	registry = append(registry, s)
}

// Scenarios returns every registered scenario: workers, restarts, pause,
// failover, interop, mixed, reshard first, in that order, then any other by
// name.
func Scenarios() []Scenario {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := slices.Clone(registry)
	rank := func(s Scenario) int {
		if i := slices.Index(order, s.Name()); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(out, func(a, b Scenario) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		switch {
		case a.Name() < b.Name():
			return -1
		case a.Name() > b.Name():
			return 1
		}
		return 0
	})
	return out
}

// Lookup returns the registered scenario named name, or nil.
func Lookup(name string) Scenario {
	for _, s := range Scenarios() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}
