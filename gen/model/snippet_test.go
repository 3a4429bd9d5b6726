package model

import (
	"strconv"
	"strings"
	"testing"
)

// TestSnippetRendersInPlace: a snippet is rendered where a body includes
// it, with the including script's keys, so one snippet names other KEYS
// slots in different scripts; a body that includes no snippet is as
// written.
func TestSnippetRendersInPlace(t *testing.T) {
	p, err := Parse("protocol.yaml", []byte(lifecycleManifest(t)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Snippets) == 0 {
		t.Fatal("the manifest declares no snippets")
	}
	for _, c := range []struct{ script, want string }{
		// emit names the events key: KEYS[8] of fail, KEYS[7] of reap_recorded_ids, KEYS[3] of progress.
		{"fail", "redis.call('XADD', KEYS[8], 'MAXLEN', '~', events_max, '*', ...)"},
		{"reap_recorded_ids", "redis.call('XADD', KEYS[7], 'MAXLEN', '~', events_max, '*', ...)"},
		{"progress", "redis.call('XADD', KEYS[3], 'MAXLEN', '~', events_max, '*', ...)"},
	} {
		s, ok := p.Script(c.script)
		if !ok {
			t.Fatalf("no script %q", c.script)
		}
		if !strings.Contains(s.Body, c.want) {
			t.Errorf("%s: body lacks %q:\n%s", c.script, c.want, s.Body)
		}
		if strings.Contains(s.Body, "{{") || strings.Contains(s.Body, "template") {
			t.Errorf("%s: body still holds template text:\n%s", c.script, s.Body)
		}
	}
}

// TestSnippetRefused: a snippet nobody includes, an unknown snippet, a
// snippet twice, a snippet whose template does not parse and one that
// names a key its including script does not declare are refused, each at
// its position.
func TestSnippetRefused(t *testing.T) {
	cases := []struct {
		name  string
		edits []string
		at    string
		want  string
	}{
		{"included by no body", []string{"snippets:\n", "snippets:\n  - {name: orphan, lua: \"local x = 1\"}\n"}, "orphan", `snippet "orphan" is included by no script body`},
		{"an unknown snippet", []string{"      {{template \"emit\"}}\n      emit('e', '{{word \"event\" \"progress\"}}'", "      {{template \"emitt\"}}\n      emit('e', '{{word \"event\" \"progress\"}}'"}, "{{template \"emitt\"}}", `{{template "emitt"}}: no snippet "emitt" is declared (did you mean "emit"?`},
		{"a snippet twice", []string{"snippets:\n", "snippets:\n  - {name: emit, lua: \"local x = 1\"}\n"}, "- name: emit\n", `snippet "emit" is declared twice`},
		{"a template that does not parse", []string{"      local function emit(...)\n", "      local function emit(...) {{key\n"}, "if events_max > 0 then", `snippet "emit": template:`},
		{"a name not snake_case", []string{"snippets:\n", "snippets:\n  - {name: Emit2, lua: \"local x = 1\"}\n"}, "Emit2", `snippet name "Emit2" must be`},
		{"a key the script lacks", []string{"      {{template \"emit\"}}\n      emit('e', '{{word \"event\" \"revived\"}}'", "      {{template \"count\"}}\n      {{template \"emit\"}}\n      emit('e', '{{word \"event\" \"revived\"}}'"}, "", `script "revive_recorded": body: {{key "counters"}}: script "revive_recorded" has no key "counters"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := lifecycleManifest(t, c.edits...)
			_, err := Parse("p.yaml", []byte(text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v; want an error containing %q", err, c.want)
			}
			if c.at == "" {
				return
			}
			i := strings.Index(text, c.at)
			line := strings.Count(text[:i], "\n") + 1
			if !strings.Contains(err.Error(), "p.yaml:"+strconv.Itoa(line)+":") {
				t.Errorf("error %v; want it at line %d (%q)", err, line, c.at)
			}
		})
	}
}

// TestSnippetRendersEachMinorsGate: a snippet shared by scripts of two
// minors renders for each what it honours through {{declares "<type>"}}:
// policy_gate compares the tripwire with 7 in a 2.7 twin and with 8 in a
// 2.8 script, which declares the starts log; and the rate limit's reads
// appear only in the scripts that declare it.
func TestSnippetRendersEachMinorsGate(t *testing.T) {
	p, err := Parse("protocol.yaml", []byte(lifecycleManifest(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		script, minor string
		rate          bool
	}{
		{"claim_policy_ids", "7", false},
		{"complete_policy_ids", "7", false},
		{"set_policy", "7", false},
		{"claim_rate_ids", "8", true},
		{"complete_rate_ids", "8", true},
		{"configure_policy", "8", false},
	} {
		s, ok := p.Script(c.script)
		if !ok {
			t.Fatalf("no script %q", c.script)
		}
		if want := "policy_claims = tonumber(claim_minor) <= " + c.minor + "\n"; !strings.Contains(s.Body, want) {
			t.Errorf("%s: body lacks %q:\n%s", c.script, want, s.Body)
		}
		if other := map[string]string{"7": "8", "8": "7"}[c.minor]; strings.Contains(s.Body, "> "+other+" then") || strings.Contains(s.Body, "<= "+other+"\n") {
			t.Errorf("%s: body compares the tripwire with minor %s too:\n%s", c.script, other, s.Body)
		}
		if got := strings.Contains(s.Body, "local by_pace"); got != c.rate {
			t.Errorf("%s: reads the rate limit's pace: %v, want %v", c.script, got, c.rate)
		}
	}
}
