package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/apirecord"
)

// fixtureSides returns the manifests the rule fixtures make from base:
// each fixture's old and new side, for seeds. A fixture that does not
// apply is skipped here; TestRuleFixtures reports it.
func fixtureSides(f *testing.F, baseText string) []string {
	f.Helper()
	paths, err := filepath.Glob("testdata/rules/*.txt")
	if err != nil {
		f.Fatal(err)
	}
	var out []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		sections := map[string]string{}
		cur := ""
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if tr := strings.TrimRight(line, "\n"); strings.HasPrefix(tr, "-- ") && strings.HasSuffix(tr, " --") {
				cur = strings.TrimSuffix(strings.TrimPrefix(tr, "-- "), " --")
				continue
			}
			if cur != "" {
				sections[cur] += line
			}
		}
		for _, side := range []string{"old", "new"} {
			if text, ok := edit(baseText, sections[side]); ok && text != baseText {
				out = append(out, text)
			}
		}
	}
	return out
}

// edit applies a fixture's search/replace blocks (see applyEdits).
func edit(text, edits string) (string, bool) {
	lines := strings.SplitAfter(edits, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		if strings.TrimRight(lines[i], "\n") != "<<<<<<<" {
			return "", false
		}
		var search, replace strings.Builder
		j := i + 1
		for ; j < len(lines) && strings.TrimRight(lines[j], "\n") != "======="; j++ {
			search.WriteString(lines[j])
		}
		k := j + 1
		for ; k < len(lines) && strings.TrimRight(lines[k], "\n") != ">>>>>>>"; k++ {
			replace.WriteString(lines[k])
		}
		if k >= len(lines) || strings.Count(text, search.String()) != 1 {
			return "", false
		}
		text = strings.Replace(text, search.String(), replace.String(), 1)
		i = k
	}
	return text, true
}

// lineCount is how many lines a finding may point into, counted as
// yaml.v3 counts them: CR LF, and each of CR, LF, NEL, LS and PS alone.
func lineCount(text string) int {
	return len(strings.Split(strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n").Replace(text), "\n"))
}

// compareFuzz is what both comparison fuzzers share: the baseline (a
// frozen release, as emqgen check loads it) and the checks of findings.
type compareFuzz struct {
	baseText string
	baseM    *manifest.Manifest
	// recorded is the baseline's surface with the Go API as recorded in
	// the release, so that API findings point into the record; generated
	// is the same surface generated in memory, as emqgen diff compares.
	recorded, generated *Surface
	apiFile, apiText    string
	bumps               map[string]Bump
}

// newCompareFuzz loads the baseline; with manifests, it seeds the
// fuzzer with whole manifests: the baseline, the working manifest, the
// frozen releases and every side of every rule fixture.
func newCompareFuzz(f *testing.F, manifests bool) *compareFuzz {
	f.Helper()
	baseBytes, err := os.ReadFile(base)
	if err != nil {
		f.Fatal(err)
	}
	c := &compareFuzz{baseText: string(baseBytes), apiFile: strings.TrimSuffix(base, ".yaml") + ".api.txt", bumps: map[string]Bump{}}
	if manifests {
		f.Add(baseBytes)
		if cur, err := os.ReadFile("../../protocol.yaml"); err == nil {
			f.Add(cur)
		}
		releases, _ := filepath.Glob("../../golden/releases/*.yaml")
		for _, r := range releases {
			if data, err := os.ReadFile(r); err == nil {
				f.Add(data)
			}
		}
		for _, s := range fixtureSides(f, c.baseText) {
			f.Add([]byte(s))
		}
	}
	if c.baseM, err = manifest.Parse("old.yaml", baseBytes); err != nil {
		f.Fatal(err)
	}
	if fs := Compare(Side{File: "old.yaml", Manifest: c.baseM}, Side{File: "old.yaml", Manifest: c.baseM}); len(fs) != 0 {
		f.Fatalf("the baseline compared with itself: %v", fs)
	}
	baseP, err := model.Parse("old.yaml", baseBytes)
	if err != nil {
		f.Fatal(err)
	}
	if c.generated, err = SurfaceOf("../..", baseP); err != nil {
		f.Fatal(err)
	}
	apiText, err := os.ReadFile(c.apiFile)
	if err != nil {
		f.Fatal(err)
	}
	c.apiText = string(apiText)
	recorded := *c.generated
	recorded.Records = maps.Clone(c.generated.Records)
	rec := &Record{File: c.apiFile, At: map[string]int{}}
	if rec.Lines, err = apirecord.ReadAPI(bytes.NewReader(apiText)); err != nil {
		f.Fatal(err)
	}
	for i, l := range strings.Split(c.apiText, "\n") {
		rec.At[l] = i + 1
	}
	recorded.SetRecord("go", rec)
	c.recorded = &recorded
	for _, r := range AllRules() {
		c.bumps[r.ID] = r.Bump
	}
	return c
}

// check compares old with new (whose texts are given) and checks the
// findings: deterministic, each of a known rule with its bump, a path and
// a message, pointing inside a file of the comparison; Judge and every
// report format take them.
func (c *compareFuzz) check(t *testing.T, old, new Side, oldText, newText string) []Finding {
	t.Helper()
	text := map[string]string{old.File: oldText, new.File: newText, c.apiFile: c.apiText}
	fs := Compare(old, new)
	if again := Compare(old, new); !reflect.DeepEqual(fs, again) {
		t.Fatalf("Compare(%s, %s) is not deterministic:\n%v\n%v", old.File, new.File, fs, again)
	}
	for _, x := range fs {
		b, known := c.bumps[x.Rule]
		if !known || x.Bump != b || x.Bump < None || x.Bump > Invalid {
			t.Fatalf("finding %+v: rule known %v, its bump %s", x, known, b)
		}
		src, ok := text[x.File]
		if !ok {
			t.Fatalf("finding %+v names a file outside the comparison", x)
		}
		if x.Line == 0 && strings.HasPrefix(x.Rule, "GO_API_") && old.Surface.Record("go") != nil && old.Surface.Record("go").File == "" {
			// A Go API generated in memory has no file to point into.
		} else if x.Line < 1 || x.Line > lineCount(src) || x.Column < 1 {
			t.Fatalf("finding %+v points outside %s (%d lines)", x, x.File, lineCount(src))
		}
		if x.Path == "" || x.Message == "" {
			t.Fatalf("finding %+v has no path or message", x)
		}
		if m := strings.TrimSpace(x.Message); strings.HasSuffix(m, ":") || strings.Contains(m, ":  ") || strings.Contains(m, ": (Go:") || strings.Contains(m, ": (manifest:") {
			t.Fatalf("finding %+v has an empty detail", x)
		}
		// Every finding is anchored in the new manifest, the file of the
		// pull request's checkout, at a line inside it.
		if x.Anchor.File != new.File || x.Anchor.Line < 1 || x.Anchor.Line > lineCount(newText) || x.Anchor.Column < 1 {
			t.Fatalf("finding %+v is not anchored inside %s (%d lines)", x, new.File, lineCount(newText))
		}
	}
	if r, err := Judge(old, new); err == nil {
		for _, format := range Formats {
			var b strings.Builder
			if err := r.Write(&b, format); err != nil {
				t.Fatalf("Write(%s): %v", format, err)
			}
			if format == "json" && !json.Valid([]byte(b.String())) {
				t.Fatalf("the json report is not JSON:\n%s", b.String())
			}
		}
	}
	return fs
}

// FuzzCompare classifies arbitrary edits of a frozen release, in both
// directions. It must never panic; a manifest compared with itself has no
// finding; the findings are deterministic, and none in one direction
// exactly when none in the other; every finding names a known rule with
// that rule's bump, and a file of the comparison with a line inside that
// file; Judge and every report format take the findings.
//
//	go test ./govern/compat -run XXX -fuzz FuzzCompare -fuzztime 3m -fuzzminimizetime 5s
func FuzzCompare(f *testing.F) {
	c := newCompareFuzz(f, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := manifest.Parse("new.yaml", data)
		if err != nil {
			return
		}
		edited := Side{File: "new.yaml", Manifest: m}
		if fs := Compare(edited, edited); len(fs) != 0 {
			t.Fatalf("new.yaml compared with itself: %v", fs)
		}
		fwd := c.check(t, Side{File: "old.yaml", Manifest: c.baseM}, edited, c.baseText, string(data))
		// The same edit taken back: the edited manifest is the old side.
		back := c.check(t, Side{File: "old.yaml", Manifest: m}, Side{File: "new.yaml", Manifest: c.baseM}, string(data), c.baseText)
		if (len(fwd) == 0) != (len(back) == 0) {
			t.Fatalf("one direction finds nothing, the other finds %v%v", fwd, back)
		}
	})
}

// FuzzCompareSurface is FuzzCompare for edits that still resolve: their
// artifacts are generated and their surfaces (the Go API, the Lua slots)
// compared, against the release's recorded API and against its generated
// one. Generating must not fail or panic, and the artifact findings obey
// FuzzCompare's checks. It is slower: each resolving input generates the
// whole SDK.
//
//	go test ./govern/compat -run XXX -fuzz FuzzCompareSurface -fuzztime 3m -fuzzminimizetime 5s
func FuzzCompareSurface(f *testing.F) {
	c := newCompareFuzz(f, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := model.Parse("new.yaml", data)
		if err != nil {
			return
		}
		s, err := SurfaceOf("../..", p)
		if err != nil {
			t.Fatalf("a resolved manifest has no surface: %v", err)
		}
		edited := Side{File: "new.yaml", Manifest: p.Source, Surface: s}
		if fs := Compare(edited, edited); len(fs) != 0 {
			t.Fatalf("new.yaml with its surface compared with itself: %v", fs)
		}
		c.check(t, Side{File: "old.yaml", Manifest: c.baseM, Surface: c.recorded}, edited, c.baseText, string(data))
		c.check(t, Side{File: "old.yaml", Manifest: c.baseM, Surface: c.generated}, edited, c.baseText, string(data))
	})
}

// FuzzCompareEdits is FuzzCompare with line-level edits of the baseline
// instead of byte mutations, which keep far more edits decodable: a line
// replaced, inserted, deleted, or moved, or a range of lines duplicated
// (a list entry copied) — renames, retypes, removals, additions and
// reorders the rules must classify, or fail closed on. An edit that
// changes a value is never found to change nothing, and an edit that
// still resolves has its surface compared too.
//
//	go test ./govern/compat -run XXX -fuzz FuzzCompareEdits -fuzztime 3m -fuzzminimizetime 5s
func FuzzCompareEdits(f *testing.F) {
	c := newCompareFuzz(f, false)
	lines := strings.SplitAfter(c.baseText, "\n")
	// Seeds: each kind of edit somewhere in every section.
	for i := 0; i < len(lines); i += 37 {
		for op := uint8(0); op < 5; op++ {
			f.Add(op, uint16(i), uint16(i+3), "    - name: extra\n")
		}
	}
	f.Fuzz(func(t *testing.T, op uint8, at, to uint16, text string) {
		i, j := int(at)%len(lines), int(to)%len(lines)
		out := slices.Clone(lines)
		switch op % 5 {
		case 0: // replace
			out[i] = text + "\n"
		case 1: // insert
			out = slices.Insert(out, i, text+"\n")
		case 2: // delete lines i..j
			if j < i {
				i, j = j, i
			}
			out = slices.Delete(out, i, min(j+1, i+40))
		case 3: // move line i before line j
			l := out[i]
			out = slices.Delete(out, i, i+1)
			out = slices.Insert(out, min(j, len(out)), l)
		case 4: // duplicate lines i..j at j
			if j < i {
				i, j = j, i
			}
			j = min(j+1, i+40)
			out = slices.Insert(out, j, slices.Clone(out[i:j])...)
		}
		data := strings.Join(out, "")
		m, err := manifest.Parse("new.yaml", []byte(data))
		if err != nil {
			return
		}
		edited := Side{File: "new.yaml", Manifest: m}
		if fs := Compare(edited, edited); len(fs) != 0 {
			t.Fatalf("new.yaml compared with itself: %v", fs)
		}
		fwd := c.check(t, Side{File: "old.yaml", Manifest: c.baseM}, edited, c.baseText, data)
		back := c.check(t, Side{File: "old.yaml", Manifest: m}, Side{File: "new.yaml", Manifest: c.baseM}, data, c.baseText)
		if (len(fwd) == 0) != (len(back) == 0) {
			t.Fatalf("one direction finds nothing, the other finds %v%v", fwd, back)
		}
		// An edit that still resolves: its artifacts generate, and the
		// artifact findings against the recorded API obey the same checks.
		if p, err := model.Resolve("new.yaml", m); err == nil {
			s, err := SurfaceOf("../..", p)
			if err != nil {
				t.Fatalf("a resolved manifest has no surface: %v", err)
			}
			c.check(t, Side{File: "old.yaml", Manifest: c.baseM, Surface: c.recorded}, Side{File: "new.yaml", Manifest: m, Surface: s}, c.baseText, data)
		}
		if data != c.baseText && len(fwd) == 0 && !strings.Contains(text, "#") {
			// A decodable edit that changes a value must be found; only
			// comments, blank lines and formatting may pass unnoticed.
			if reflect.DeepEqual(flattenValues(c.baseM), flattenValues(m)) {
				return
			}
			t.Fatalf("an edit changed the manifest's values but found nothing")
		}
	})
}

// flattenValues is a manifest's leaves without their positions.
func flattenValues(m *manifest.Manifest) map[string]string {
	out := map[string]string{}
	for p, l := range flatten(m) {
		if p == "version" {
			continue
		}
		out[p] = fmt.Sprint(l.kind) + "\x00" + l.value
	}
	return out
}
