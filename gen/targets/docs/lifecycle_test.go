package docs

import (
	"os"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/model"
)

// Deprecations, non-default writer duties and retired names appear in the
// reference; without them the reference is unchanged.
func TestLifecycleRendered(t *testing.T) {
	data, err := os.ReadFile("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, e := range [][2]string{
		{"  - name: ARC\n    summary: An archive entry; platform scope.\n", "  - name: ARC\n    summary: An archive entry; platform scope.\n    deprecated: {since: 2.1.0, reason: archives move to their own service}\n"},
		{"    - {name: dead, class: queue, redis: zset, summary: Buried jobs; the morgue.}\n", "    - {name: dead, class: queue, redis: zset, duty: every-writer, summary: Buried jobs; the morgue.}\n"},
	} {
		if strings.Count(s, e[0]) != 1 {
			t.Fatalf("%q is not in protocol.yaml exactly once", e[0])
		}
		s = strings.Replace(s, e[0], e[1], 1)
	}
	// The retired section follows the history, the manifest's end.
	s = strings.TrimRight(s, "\n") + "\n\nretired:\n  - {what: class, name: EMQGONE, since: 2.0.0, meaning: a v1 refusal}\n"
	p, err := model.Parse("protocol.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	out := render(t, p)
	for _, want := range []string{
		"An archive entry; platform scope. **Deprecated since 2.1.0.** archives move to their own service",
		"Buried jobs; the morgue. **Every writer maintains it.**",
		"### Retired names",
		"| class | `EMQGONE` | `2.0.0` | a v1 refusal |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the reference does not say %q", want)
		}
	}
	if plain := render(t, load(t)); strings.Contains(plain, "Deprecated since") || strings.Contains(plain, "Retired names") || strings.Contains(plain, "Every writer maintains") {
		t.Error("the reference of protocol.yaml mentions lifecycle marks it does not have")
	}
}
