package compat

import (
	"os"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/manifest"
)

// Collections whose order carries no meaning are sets: reordering them is
// no change at all. Each case swaps two adjacent lines of a frozen release.
func TestUnorderedCollectionsAreSets(t *testing.T) {
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	swaps := map[string][2]string{
		"transitions":   {"      - {from: active, to: pending}\n", "      - {from: active, to: dead}\n"},
		"reply values":  {"        - {value: 1, name: released}\n", "        - {value: 0, name: not_owner, summary: the lock is free or held by another owner}\n"},
		"states":        {"    - {name: pending, set: pending, summary: Waiting to be claimed.}\n", "    - {name: active, set: active, summary: Leased to one worker until its deadline.}\n"},
		"refusals":      {"      - {id: token, class: EMQSTALE, message: extend token mismatch, when: the row is gone or its attempts differ from the token}\n", "      - {id: state, class: EMQSTALE, message: extend job not active, when: the row is not active}\n"},
		"key types":     {"    - {name: pending, class: queue, redis: zset, summary: Claimable jobs in mint order.}\n", "    - {name: active, class: queue, redis: zset, summary: Leased jobs by lease deadline.}\n"},
		"lock names":    {"      - {name: \"node:<node>\", summary: \"the id minter's lease on a snowflake node number\"}\n", "      - {name: \"maintenance:<queue>\", summary: the worker that promotes and reaps a queue}\n"},
		"queue example": {"  examples: [orders, emails.v2, a, 0-retry_queue]\n", "  examples: [emails.v2, orders, a, 0-retry_queue]\n"},
	}
	old, err := manifest.Parse("old.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	for name, sw := range swaps {
		a, b := sw[0], sw[1]
		var edited string
		switch {
		case strings.Count(text, a+b) == 1:
			edited = strings.Replace(text, a+b, b+a, 1)
		case strings.Count(text, a) == 1 && !strings.HasPrefix(a, "      - {") && !strings.HasPrefix(a, "    - {") && !strings.HasPrefix(a, "        - {"):
			edited = strings.Replace(text, a, b, 1)
		default:
			t.Fatalf("%s: the two lines are not adjacent exactly once in %s", name, base)
		}
		m, err := manifest.Parse("new.yaml", []byte(edited))
		if err != nil {
			t.Fatal(err)
		}
		if fs := Compare(Side{File: "old.yaml", Manifest: old}, Side{File: "new.yaml", Manifest: m}); len(fs) != 0 {
			t.Errorf("%s reordered: %v; want no finding", name, lines(fs))
		}
	}
}

// Every edit of a probe — a line deleted, duplicated or changed — is
// reported with a detail that says what changed.
func TestProbeFindingsHaveDetails(t *testing.T) {
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	old, err := manifest.Parse("old.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.SplitAfter(string(data), "\n")
	n := 0
	for i, l := range ls {
		if !strings.Contains(l, "with:") && !strings.Contains(l, "expect:") && !strings.Contains(l, "save:") {
			continue
		}
		for op := 0; op < 2; op++ {
			out := append([]string{}, ls[:i]...)
			if op == 1 {
				out = append(out, strings.Replace(strings.Replace(l, "int: 0", "int: 1", 1), "\"${job}\"", "\"${job2}\"", 1))
			}
			out = append(out, ls[i+1:]...)
			m, err := manifest.Parse("new.yaml", []byte(strings.Join(out, "")))
			if err != nil {
				continue
			}
			for _, f := range Compare(Side{File: "old.yaml", Manifest: old}, Side{File: "new.yaml", Manifest: m}) {
				n++
				msg := strings.TrimSpace(f.Message)
				if strings.HasSuffix(msg, ":") || strings.Contains(msg, ":  ") || strings.Contains(msg, ": (Go:") {
					t.Errorf("line %d: %s: empty detail", i+1, f.Text())
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no probe edit produced a finding")
	}
}

// A vocabulary's words, like kinds, are a set: reordering them changes no
// word on the wire, only the order the SDKs list them in.
func TestVocabularyWordsAreASet(t *testing.T) {
	data, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	const at = "# 7. Scripts\n"
	a, b := "      - {word: error, summary: The handler failed.}\n", "      - {word: lease_lost, summary: The lease expired.}\n"
	with := func(words string) *manifest.Manifest {
		text := strings.Replace(string(data), at, "vocabularies:\n  - name: failure_class\n    words:\n"+words+"\n"+at, 1)
		m, err := manifest.Parse("m.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	old, reordered := with(a+b), with(b+a)
	if fs := Compare(Side{File: "old.yaml", Manifest: old}, Side{File: "new.yaml", Manifest: reordered}); len(fs) != 0 {
		t.Errorf("words reordered: %v; want no finding", lines(fs))
	}
	// The comparison can fail: a word more is a finding.
	more := with(a + b + "      - {word: timeout}\n")
	if fs := Compare(Side{File: "old.yaml", Manifest: old}, Side{File: "new.yaml", Manifest: more}); len(fs) != 1 || fs[0].Rule != "WORD_ADDED" {
		t.Errorf("a word added: %v; want one WORD_ADDED", lines(fs))
	}
}
