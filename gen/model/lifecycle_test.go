package model

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// lifecycleManifest is protocol.yaml with every lifecycle field used once.
func lifecycleManifest(t *testing.T, edits ...string) string {
	t.Helper()
	data, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(edits); i += 2 {
		if strings.Count(s, edits[i]) != 1 {
			t.Fatalf("%q does not occur exactly once in protocol.yaml", edits[i])
		}
		s = strings.Replace(s, edits[i], edits[i+1], 1)
	}
	return s
}

const (
	arcLine  = "  - name: ARC\n    summary: An archive entry; platform scope.\n"
	wakeLine = "    - name: wake\n      class: queue\n      redis: list\n      duty: hint\n"
	// runningLine is a policy's key type, behind active's tripwire;
	// tripLine is that tripwire.
	runningLine = "    - name: running\n      class: queue\n      redis: zset\n      duty: every-claimer\n      behind: active\n"
	tripLine    = "      tripwire:\n        redis: string\n        moves_to: running\n        floor: 2.1.1\n"
)

// histEnd is the manifest's last line (the end of its history), where
// the tests append a retired section.
var histEnd = func() string {
	b, err := os.ReadFile("../../protocol.yaml")
	if err != nil {
		panic(err)
	}
	lines := strings.SplitAfter(strings.TrimRight(string(b), "\n")+"\n", "\n")
	return lines[len(lines)-2]
}()

func TestLifecycleResolves(t *testing.T) {
	text := lifecycleManifest(t,
		arcLine, arcLine+"    deprecated: {since: 2.1.0, reason: archives move to their own service}\n",
		histEnd, histEnd+"\nretired:\n  - {what: class, name: EMQGONE, since: 2.0.0, meaning: a v1 refusal}\n  - {what: reply_value, name: \"enqueue:2\", since: 2.1.0}\n")
	p, err := Parse("p.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	var arc Kind
	for _, k := range p.Kinds {
		if k.Name == "ARC" {
			arc = k
		}
	}
	if arc.Deprecated == nil || arc.Deprecated.Since != (Semver{2, 1, 0}) || arc.Deprecated.Reason == "" {
		t.Errorf("ARC's deprecation = %+v", arc.Deprecated)
	}
	for _, kt := range p.KeyTypes {
		if kt.Behind != "" {
			// A policy's key type: every claimer honours it, behind the
			// tripwire of the key type it names.
			if kt.Duty != DutyEveryClaimer {
				t.Errorf("key type %s: duty %q behind %s, want %s", kt.Name, kt.Duty, kt.Behind, DutyEveryClaimer)
			}
			if b, ok := p.KeyType(kt.Behind); !ok || b.Tripwire == nil || b.Tripwire.MovesTo != "running" || b.Tripwire.Floor != (Semver{2, 1, 1}) {
				t.Errorf("key type %s: behind %s, whose tripwire is %+v", kt.Name, kt.Behind, b.Tripwire)
			}
			continue
		}
		if kt.Duty != DutyHint {
			t.Errorf("key type %s: duty %q, want hint (declared or by default)", kt.Name, kt.Duty)
		}
	}
	for _, f := range p.Row.Fields {
		if f.Duty != DutyEveryWriter {
			t.Errorf("row field %s: duty %q, want every-writer by default", f.Name, f.Duty)
		}
	}
	if len(p.Retired) != 2 || p.Retired[0].Name != "EMQGONE" || p.Retired[1].Since != (Semver{2, 1, 0}) {
		t.Errorf("retired = %+v", p.Retired)
	}
}

// Each lifecycle mistake is refused at its file:line:col.
func TestLifecycleRefused(t *testing.T) {
	cases := []struct {
		name  string
		edits []string
		want  string
	}{
		{"a retired class word is live", []string{histEnd, histEnd + "\nretired:\n  - {what: class, name: EMQKIND, since: 2.0.0}\n"}, `class "EMQKIND" is retired (tombstone at line`},
		{"a retired reply value is live", []string{histEnd, histEnd + "\nretired:\n  - {what: reply_value, name: \"enqueue:1\", since: 2.0.0}\n"}, `reply value "enqueue:1" is retired`},
		{"a retired lock name is live", []string{histEnd, histEnd + "\nretired:\n  - {what: lock, name: \"probe:<queue>\", since: 2.0.0}\n"}, `lock "probe:<queue>" is retired`},
		{"retired twice", []string{histEnd, histEnd + "\nretired:\n  - {what: state, name: gone, since: 2.0.0}\n  - {what: state, name: gone, since: 2.0.0}\n"}, `state "gone" is retired twice`},
		{"an unknown kind of name", []string{histEnd, histEnd + "\nretired:\n  - {what: colour, name: red, since: 2.0.0}\n"}, `what "colour" is not one of`},
		{"a reply value without its script", []string{histEnd, histEnd + "\nretired:\n  - {what: reply_value, name: \"7\", since: 2.0.0}\n"}, `is not <script>:<integer>`},
		{"a tombstone from the future", []string{histEnd, histEnd + "\nretired:\n  - {what: state, name: gone, since: 9.0.0}\n"}, `since 9.0.0 is after the manifest's version`},
		{"a deprecation from the future", []string{arcLine, arcLine + "    deprecated: {since: 3.0.0}\n"}, `deprecated since 3.0.0 is after the manifest's version`},
		{"an unknown duty", []string{wakeLine, strings.Replace(wakeLine, "duty: hint", "duty: sometimes", 1)}, `duty "sometimes" is not one of every-writer, every-claimer, every-completer, hint`},
		{"a policy's duty with no tripwire behind it", []string{runningLine, strings.Replace(runningLine, "      behind: active\n", "", 1)}, `key type "running": duty every-claimer binds the scripts of every release`},
		{"behind a key type without a tripwire", []string{runningLine, strings.Replace(runningLine, "behind: active", "behind: pending", 1)}, `key type "running": behind "pending" must name a key type with a tripwire`},
		{"a tripwire of the key type's own redis type", []string{tripLine, strings.Replace(tripLine, "redis: string", "redis: zset", 1)}, `key type "active": tripwire redis type "zset" must be one of`},
		{"a tripwire whose members move to a hash", []string{tripLine, strings.Replace(tripLine, "moves_to: running", "moves_to: policy", 1)}, `key type "active": tripwire moves_to "policy" must name another key type of class queue and redis type zset`},
		{"a tripwire floor from the future", []string{tripLine, strings.Replace(tripLine, "floor: 2.1.1", "floor: 9.0.0", 1)}, `tripwire floor 9.0.0 is after the manifest's version`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := lifecycleManifest(t, c.edits...)
			_, err := Parse("p.yaml", []byte(text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse = %v; want an error containing %q", err, c.want)
			}
			for _, l := range strings.Split(err.Error(), "\n") {
				if strings.Contains(l, c.want) && !strings.HasPrefix(l, "p.yaml:") {
					t.Errorf("error without file:line:col: %s", l)
				} else if strings.Contains(l, c.want) {
					var line, col int
					if _, e := fmtSscanf(l, &line, &col); e != nil || line < 1 || col < 1 {
						t.Errorf("error without a position: %s", l)
					}
				}
			}
		})
	}
}

func fmtSscanf(l string, line, col *int) (int, error) {
	return fmt.Sscanf(l, "p.yaml:%d:%d:", line, col)
}
