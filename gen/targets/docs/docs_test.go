package docs

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
)

const fakeDigest = "0123456789abcdef0123456789abcdef01234567"

func load(t *testing.T) *model.Protocol {
	t.Helper()
	p, err := model.Load("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeShas gives every script a distinct, recognisable SHA-1.
func fakeShas(p *model.Protocol) map[string]string {
	shas := map[string]string{}
	for i, s := range p.Scripts {
		shas[s.Name] = fmt.Sprintf("%040x", i+1)
	}
	return shas
}

func render(t *testing.T, p *model.Protocol) string {
	t.Helper()
	files, err := Emit(p, fakeDigest, fakeShas(p))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Path != "docs/protocol.md" || files[1].Path != "docs/CHANGELOG.md" {
		t.Fatalf("Emit returned %d files (first %q), want docs/protocol.md and docs/CHANGELOG.md", len(files), files[0].Path)
	}
	return string(files[0].Data)
}

func TestHeaderFirst(t *testing.T) {
	doc := render(t, load(t))
	first, _, _ := strings.Cut(doc, "\n")
	if want := "<!-- " + header.Marker + " -->"; first != want {
		t.Errorf("first line = %q, want %q", first, want)
	}
}

func TestEveryFactAppears(t *testing.T) {
	p := load(t)
	doc := render(t, p)
	need := func(what, s string) {
		t.Helper()
		if !strings.Contains(doc, s) {
			t.Errorf("%s %q does not appear", what, s)
		}
	}
	need("title", "# "+p.Name+" wire protocol "+p.Version.String())
	need("digest", fakeDigest)
	for _, s := range p.Scripts {
		need("script heading", "### `"+s.Name+"`")
		need("script SHA-1", fakeShas(p)[s.Name])
		need("script body", "```lua\n"+s.Body)
		for _, r := range s.Refusals {
			need("refusal", r.Text())
		}
		for _, k := range s.Keys {
			need("key shape", p.KeyShape(k))
		}
	}
	for _, c := range p.Classes {
		need("class heading", "### `"+c.Word+"`")
		for i, st := range c.Probe.Steps {
			need("class probe step", fmt.Sprintf("%d. %s:", i+1, st.Check))
		}
	}
	for _, m := range p.Reserve {
		need("reserve heading", "### `"+p.MemberShape(m)+"`")
		for _, f := range m.Fields {
			need("reserve member field", "| `"+f.Name+"` |")
		}
		for i, st := range m.Probe.Steps {
			need("reserve probe step", fmt.Sprintf("%d. %s:", i+1, st.Check))
		}
	}
	for _, st := range p.Row.States {
		need("state", "| `"+st.Name+"` |")
	}
	for _, k := range p.Kinds {
		need("kind", "| `"+k.Name+"` |")
	}
	for _, q := range p.Queues.Invalid {
		need("invalid queue name", fmt.Sprintf("`%q`", q))
	}
	for _, b := range p.IDs.Layout {
		need("snowflake field", fmt.Sprintf("| `%s` | %d | %d |", b.Name, b.Bits, b.Shift))
	}
	for _, r := range p.Governance.History {
		need("release", "`"+r.Version.String()+"`")
	}
}

// mermaid returns the lines of the doc's Mermaid block.
func mermaid(t *testing.T, doc string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "```mermaid\nstateDiagram-v2\n")
	if !ok {
		t.Fatal("no mermaid stateDiagram-v2 block")
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("the mermaid block is not closed")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	return lines
}

func TestLifecycleDiagram(t *testing.T) {
	p := load(t)
	lines := mermaid(t, render(t, p))
	end := func(s string) string {
		if s == model.None {
			return "[*]"
		}
		return s
	}
	edges := 0
	for _, s := range p.Scripts {
		for _, tr := range s.Transitions {
			prefix := end(tr.From) + " --> " + end(tr.To) + ": "
			found := false
			for _, l := range lines {
				if label, ok := strings.CutPrefix(l, prefix); ok {
					found = true
					if !contains(strings.Split(label, ", "), s.Name) {
						t.Errorf("edge %q is not labelled with script %s", l, s.Name)
					}
				}
			}
			if !found {
				t.Errorf("no edge %q for script %s (diagram:\n%s)", prefix, s.Name, strings.Join(lines, "\n"))
			}
			edges++
		}
	}
	if edges == 0 {
		t.Fatal("the manifest declares no transitions")
	}
	// Shared edges are merged: no edge line appears twice.
	seen := map[string]bool{}
	for _, l := range lines {
		head, _, _ := strings.Cut(l, ":")
		if seen[head] {
			t.Errorf("edge %q appears twice", head)
		}
		seen[head] = true
	}
	for _, want := range []string{"[*] --> pending: enqueue", "active --> [*]: complete", "active --> dead: bury, reap"} {
		found := false
		for _, l := range lines {
			found = found || l == want || strings.HasPrefix(l, want+",")
		}
		if !found {
			t.Errorf("diagram lacks %q", want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	p := load(t)
	a, b := render(t, p), render(t, load(t))
	if a != b {
		t.Error("two renders differ")
	}
}

func TestTidy(t *testing.T) {
	doc := render(t, load(t))
	if !strings.HasSuffix(doc, "\n") || strings.HasSuffix(doc, "\n\n") {
		t.Error("the document must end with exactly one newline")
	}
	fenced := false
	blank := false
	for i, l := range strings.Split(strings.TrimSuffix(doc, "\n"), "\n") {
		if strings.TrimRight(l, " \t") != l {
			t.Errorf("line %d has trailing whitespace: %q", i+1, l)
		}
		if strings.HasPrefix(l, "```") {
			fenced = !fenced
		}
		if !fenced && l == "" && blank {
			t.Errorf("line %d: two blank lines in a row", i+1)
		}
		blank = l == ""
	}
	if fenced {
		t.Error("a code fence is left open")
	}
}

// TestModelDrivesOutput renames a wire class in a copy of the model: the
// new word must reach the document and the original must not change.
func TestModelDrivesOutput(t *testing.T) {
	p := load(t)
	before := render(t, p)

	q := *p
	q.Classes = append([]model.Class(nil), p.Classes...)
	q.Scripts = append([]model.Script(nil), p.Scripts...)
	old := q.Classes[0].Word
	q.Classes[0].Word = "EMQRENAMED"
	for i := range q.Scripts {
		q.Scripts[i].Refusals = append([]model.Refusal(nil), q.Scripts[i].Refusals...)
		for j := range q.Scripts[i].Refusals {
			if q.Scripts[i].Refusals[j].Class == old {
				q.Scripts[i].Refusals[j].Class = "EMQRENAMED"
			}
		}
	}
	after := render(t, &q)
	if after == before {
		t.Fatal("renaming a wire class did not change the document")
	}
	for _, want := range []string{"### `EMQRENAMED`", "[`EMQRENAMED`](#emqrenamed)"} {
		if !strings.Contains(after, want) {
			t.Errorf("the renamed document lacks %q", want)
		}
	}
	if again := render(t, p); again != before {
		t.Error("rendering the copy changed the original model")
	}
}

func TestMissingSHA(t *testing.T) {
	p := load(t)
	shas := fakeShas(p)
	delete(shas, p.Scripts[0].Name)
	if _, err := Emit(p, fakeDigest, shas); err == nil || !strings.Contains(err.Error(), p.Scripts[0].Name) {
		t.Errorf("Emit without a SHA-1 for %s: err = %v, want one naming the script", p.Scripts[0].Name, err)
	}
}

func TestHelpers(t *testing.T) {
	for in, want := range map[string]string{
		"":            "`\"\"`",
		"a`b":         "`` a`b ``",
		"emq:{<q>}:x": "`emq:{<q>}:x`",
	} {
		if got := code(in); got != want {
			t.Errorf("code(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := text("node:<n> and `x<y>`"), "node:\\<n> and `x<y>`"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if got, want := slug("`{emq}:migration:<queue>`"), "emqmigrationqueue"; got != want {
		t.Errorf("slug = %q, want %q", got, want)
	}
	if got := tidy([]byte("a  \n\n\n\nb\n```\nx  \n\n\n```\n\n")); !bytes.Equal(got, []byte("a\n\nb\n```\nx  \n\n\n```\n")) {
		t.Errorf("tidy = %q", got)
	}
}

// The changelog lists the history newest first, says each release's bump
// from the one before, and gives the current version's record and digest.
func TestChangelog(t *testing.T) {
	p := load(t)
	files, err := Emit(p, fakeDigest, fakeShas(p))
	if err != nil {
		t.Fatal(err)
	}
	log := string(files[1].Data)
	if !strings.HasPrefix(log, "<!-- "+header.Marker+" -->\n") {
		t.Errorf("the changelog does not open with the generated marker:\n%s", log[:80])
	}
	h := p.Governance.History
	last := -1
	for i := len(h) - 1; i >= 0; i-- {
		head := fmt.Sprintf("## %s — %s\n", h[i].Version, h[i].Status)
		at := strings.Index(log, head)
		if at < 0 || at < last {
			t.Errorf("%q missing or out of newest-first order", head)
		}
		last = at
	}
	cur := h[len(h)-1]
	if len(h) > 1 {
		prev := h[len(h)-2]
		want := "minor"
		if cur.Version.Major != prev.Version.Major {
			want = "major"
		} else if cur.Version.Minor == prev.Version.Minor {
			want = "patch"
		}
		if !strings.Contains(log, fmt.Sprintf("A %s release after %s.", want, prev.Version)) {
			t.Errorf("the current entry does not say it is a %s release after %s", want, prev.Version)
		}
	}
	if !strings.Contains(log, "`"+p.VersionRecord()+"`") || !strings.Contains(log, "`"+fakeDigest+"`") {
		t.Error("the current entry lacks its version record or bundle digest")
	}
}
