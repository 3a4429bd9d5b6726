package model

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The ring script, as protocol.yaml declares it, for the tests to give an
// argument with a vocabulary and a body that uses it.
const (
	ringKeys = "  - name: ring\n    summary: (2.1.0) Ring the queue's doorbell, as maintenance does after promoting or reaping jobs back to pending.\n    keys:\n      - {name: wake, type: wake}\n"
	ringBody = "      {{guard}}\n      if redis.call('LLEN', {{key \"wake\"}}) == 0 then\n"
	vocWords = "      - {word: lease_lost, summary: \"The lease expired before the job was settled and maintenance took it back.\"}\n"
	vocName  = "  - name: failure_class\n"
)

func TestRealVocabularies(t *testing.T) {
	p := loadReal(t)
	v, ok := p.Vocabulary("failure_class")
	if !ok {
		t.Fatal("vocabulary failure_class is not declared")
	}
	if diff := cmp.Diff([]string{"error", "panic", "timeout", "lease_lost"}, wordList(v)); diff != "" {
		t.Errorf("words (-want +got):\n%s", diff)
	}
	if !v.Has("lease_lost") || v.Has("LEASE_LOST") || v.Summary == "" {
		t.Errorf("Has/summary wrong: %+v", v)
	}
}

// A body writes a word bare and the set as a Lua table; an argument and a
// reply element carry their vocabulary into the model.
func TestVocabularyInScripts(t *testing.T) {
	text := lifecycleManifest(t,
		ringKeys, ringKeys+"    argv:\n      - {name: why, type: string, vocabulary: failure_class}\n",
		ringBody, ringBody+"      if not ({{vocabulary \"failure_class\"}})[{{arg \"why\"}}] then return redis.error_reply('ERR why') end\n      local w = '{{word \"failure_class\" \"lease_lost\"}}'\n")
	p, err := Parse("p.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := p.Script("ring")
	if got := s.Argv[0].Vocabulary; got != "failure_class" {
		t.Errorf("argument vocabulary = %q", got)
	}
	for _, want := range []string{
		"if not ({['error'] = true, ['panic'] = true, ['timeout'] = true, ['lease_lost'] = true})[ARGV[1]] then",
		"local w = 'lease_lost'",
	} {
		if !strings.Contains(s.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, s.Body)
		}
	}
}

// A manifest without the section is valid: every frozen release before
// 2.3.0 is one.
func TestVocabulariesOptional(t *testing.T) {
	text, err := os.ReadFile("../../golden/releases/2.2.1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(text), "vocabularies:") {
		t.Fatal("the 2.2.1 release declares vocabularies; pick a release without the section")
	}
	p, err := Parse("2.2.1.yaml", text)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Vocabularies) != 0 {
		t.Errorf("vocabularies = %+v", p.Vocabularies)
	}
}

func cutSection(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	j := strings.Index(s[i:], to)
	if i < 0 || j < 0 {
		t.Fatalf("no %q ... %q", from, to)
	}
	return s[:i] + s[i+j:]
}

// Each vocabulary mistake is refused at the file:line:col of the value at
// fault.
func TestVocabularyRefused(t *testing.T) {
	withArg := func(decl string) []string {
		return []string{ringKeys, ringKeys + "    argv:\n      - " + decl + "\n", ringBody, ringBody + "      local a = {{arg \"why\"}}\n"}
	}
	withBody := func(line string) []string {
		return []string{ringBody, ringBody + "      " + line + "\n"}
	}
	cases := []struct {
		name  string
		edits []string
		at    string // the text whose first occurrence in the edited manifest is the error's position
		want  string
	}{
		{"a name not snake_case", []string{vocName, "  - name: FailureClass\n"}, "FailureClass", `vocabulary name "FailureClass" must be`},
		{"a word not snake_case", []string{vocWords, "      - {word: Lease-Lost}\n"}, "Lease-Lost", `word "Lease-Lost" must be a lower-case identifier`},
		{"a word too long", []string{vocWords, "      - {word: " + strings.Repeat("x", 33) + "}\n"}, strings.Repeat("x", 33), `is 33 bytes; a word is at most 32`},
		{"a word twice", []string{vocWords, vocWords + "      - {word: panic}\n"}, "panic}\n", `vocabulary "failure_class" word "panic" is declared twice`},
		{"words that differ in underscores", []string{vocWords, vocWords + "      - {word: leaselost}\n"}, "leaselost}", `words "lease_lost" and "leaselost" differ only in underscores`},
		{"a vocabulary twice", []string{"\n# ---------------------------------------------------------------------------\n# 6c. Snippets", "  - {name: failure_class, words: [{word: x}]}\n\n# ---------------------------------------------------------------------------\n# 6c. Snippets"}, "failure_class, words", `vocabulary "failure_class" is declared twice`},
		{"no words", []string{"\n# ---------------------------------------------------------------------------\n# 6c. Snippets", "  - {name: empty, words: []}\n\n# ---------------------------------------------------------------------------\n# 6c. Snippets"}, "{name: empty", `vocabulary "empty" has no words`},
		{"an unknown vocabulary", withArg("{name: why, type: string, vocabulary: failure_clas}"), "failure_clas}", `vocabulary "failure_clas" is not declared (did you mean "failure_class"? declared: failure_class, event, backoff, dedup, admission, missed, firing, policy)`},
		{"a vocabulary on an int", withArg("{name: why, type: int, vocabulary: failure_class}"), "failure_class}", `a vocabulary types a value of type string, not int`},
		{"an unknown word", withBody("local w = '{{word \"failure_class\" \"oom\"}}'"), "word \"failure_class\" \"oom\"", `"oom" is not a word of vocabulary "failure_class" (words: error, panic, timeout, lease_lost)`},
		{"a word of an unknown vocabulary", withBody("local w = '{{word \"failure\" \"error\"}}'"), "word \"failure\"", `vocabulary "failure" is not declared (declared: failure_class, event, backoff, dedup, admission, missed, firing, policy)`},
		{"an unknown vocabulary table", withBody("local v = {{vocabulary \"failur_class\"}}"), "vocabulary \"failur_class\"", `{{vocabulary "failur_class"}}: vocabulary "failur_class" is not declared (did you mean "failure_class"?`},
		{"a deprecation from the future", []string{vocName, vocName + "    deprecated: {since: 9.0.0}\n"}, "9.0.0", `deprecated since 9.0.0 is after the manifest's version`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := lifecycleManifest(t, c.edits...)
			_, err := Parse("p.yaml", []byte(text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v; want an error containing %q", err, c.want)
			}
			// The position of the value at fault.
			i := strings.Index(text, c.at)
			if i < 0 {
				t.Fatalf("%q is not in the manifest", c.at)
			}
			line := strings.Count(text[:i], "\n") + 1
			col := i - strings.LastIndexByte(text[:i], '\n')
			var found bool
			for _, l := range strings.Split(err.Error(), "\n") {
				if !strings.Contains(l, c.want) {
					continue
				}
				found = true
				var gl, gc int
				if _, e := fmtSscanf(l, &gl, &gc); e != nil || gl != line || gc != col {
					t.Errorf("error at %d:%d, want p.yaml:%d:%d: %s", gl, gc, line, col, l)
				}
			}
			if !found {
				t.Errorf("no line of the error contains %q", c.want)
			}
		})
	}
}

func TestVocabularyPlural(t *testing.T) {
	for name, want := range map[string]string{
		"failure_class": "failure_classes",
		"category":      "categories",
		"event_type":    "event_types",
		"day":           "days",
		"box":           "boxes",
		"outcome":       "outcomes",
	} {
		if got := (Vocabulary{Name: name}).Plural(); got != want {
			t.Errorf("Plural(%q) = %q, want %q", name, got, want)
		}
	}
}
