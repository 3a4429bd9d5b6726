package manifest

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// Hostile text is refused with the file:line:col of the character; prose
// may use any visible character and invalid examples may hold escaped
// control characters.
func TestHostileTextRefused(t *testing.T) {
	data, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := string(data)
	lineOf := func(s, sub string) int { return strings.Count(s[:strings.Index(s, sub)], "\n") + 1 }
	cases := []struct {
		name, old, new string
		// at is the text that marks the line of the error; col its column.
		at   string
		col  int
		want string
	}{
		{"bidi in a comment", "# EchoMQ wire protocol — the manifest.", "# EchoMQ wire protocol \u202e— the manifest.", "# EchoMQ wire protocol", 24, "bidirectional control character (U+202E)"},
		{"bidi in a script body", "      if redis.call('EXISTS', {{key \"row\"}}) == 1 then\n        return 0\n      end\n      redis.call('HSET', {{key \"row\"}}, '{{field \"state\"}}', '{{state \"pending\"}}'",
			"      if redis.call('EXISTS', {{key \"row\"}}) == 1 then\n        return 0\n      end\n      redis.call('HSET', {{key \"row\"}}, '{{field \"state\"}}\u2066', '{{state \"pending\"}}'", "'{{field \"state\"}}\u2066", 59, "bidirectional control character (U+2066)"},
		{"zero-width in prose", "summary: An archive entry; platform scope.", "summary: An archive\u200b entry; platform scope.", "An archive\u200b", 24, "zero-width character (U+200B)"},
		{"control character", "summary: An archive entry; platform scope.", "summary: An archive\x07 entry; platform scope.", "An archive\x07", 24, "control character (U+0007)"},
		{"escaped bidi in a message", "message: job id must be JOB-namespaced, when: the id is not of the work kind}\n    transitions:\n      - {from: none, to: pending}",
			"message: \"job id must be \\u202eJOB-namespaced\", when: the id is not of the work kind}\n    transitions:\n      - {from: none, to: pending}", "\"job id must be \\u202eJOB", 45, "message: a bidirectional control character (U+202E) is refused in any value"},
		{"homoglyph in a class word", "  - word: EMQKIND\n", "  - word: EMQKІND\n", "  - word: EMQKІND", 15, "word: the non-ASCII character 'І' (U+0406) is refused outside prose"},
		{"non-ASCII in a script body", "        return {{refuse \"kind\"}}\n      end\n      if redis.call('EXISTS', {{key \"row\"}}) == 1 then\n        return 0\n      end\n      redis.call('HSET', {{key \"row\"}}, '{{field \"state\"}}', '{{state \"pending\"}}'",
			"        return {{refuse \"kind\"}}\n      end\n      if redis.call('EXISTS', {{key \"row\"}}) == 1 then\n        return 0 -- é\n      end\n      redis.call('HSET', {{key \"row\"}}, '{{field \"state\"}}', '{{state \"pending\"}}'", "        return 0 -- é", 21, "body: the non-ASCII character 'é' (U+00E9)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if strings.Count(base, c.old) < 1 {
				t.Fatalf("%q is not in the manifest", c.old)
			}
			text := strings.Replace(base, c.old, c.new, 1)
			_, err := Parse("p.yaml", []byte(text))
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse = %v; want *Errors", err)
			}
			line := lineOf(text, c.at)
			found := false
			for _, e := range errs.List {
				if e.Pos.Line == line && e.Pos.Col == c.col && strings.Contains(e.Msg, c.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("want p.yaml:%d:%d: …%s…; got:\n%v", line, c.col, c.want, err)
			}
		})
	}
	// Allowed: any visible character in prose, escaped control characters
	// in invalid examples (the queue grammar's "a\nb" already is one).
	ok := strings.Replace(base, "summary: An archive entry; platform scope.", "summary: An archive entry — platform scope, «ÀRC».", 1)
	if _, err := Parse("p.yaml", []byte(ok)); err != nil {
		t.Errorf("prose with visible non-ASCII: %v", err)
	}
	// A no-break space is visible prose typography; outside prose it is
	// non-ASCII, refused like any other.
	nbsp := strings.Replace(base, "summary: An archive entry; platform scope.", "summary: An archive entry; 10\u00a0ms, 5\u202fs.", 1)
	if _, err := Parse("p.yaml", []byte(nbsp)); err != nil {
		t.Errorf("prose with a no-break space: %v", err)
	}
	word := strings.Replace(base, "  - word: EMQKIND\n", "  - word: EMQ\u00a0KIND\n", 1)
	if _, err := Parse("p.yaml", []byte(word)); err == nil || !strings.Contains(err.Error(), "U+00A0") {
		t.Errorf("a no-break space in a class word: %v; want it refused outside prose", err)
	}
	if !strings.Contains(base, `"a\nb"`) {
		t.Fatal(`the queue grammar's invalid examples no longer hold "a\nb"`)
	}
}
