// Package probe runs probes: checks, declared as data in the protocol
// manifest, that a live server behaves as the manifest says. It knows no
// protocol fact itself; a Runtime supplies keys, ids, scripts and the
// fence's verdict, so the generated SDK and emqgen run the same
// interpreter over the same data.
package probe

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/redis/rueidis"
)

// Probe is a named list of checks.
type Probe struct {
	Target  string // what it checks, e.g. "wire class EMQKIND"
	Summary string
	Steps   []Step
}

// Step is one check: run a script or send a command, then compare the
// reply with Expect. Strings may hold ${...} placeholders.
type Step struct {
	Check   string
	Script  string   // a script to run by name, or empty
	With    []Arg    // the script's ARGV by name; the runtime fills prefixes
	Command []string // a command to send when Script is empty
	Save    string   // name under which to keep the reply
	Expect  Expect
}

// Arg is one named script argument.
type Arg struct {
	Name, Value string
}

// Expect is what a step's reply must be.
type Expect struct {
	Kind    string // int, string, error, nil, positive or fence
	Element string // narrow an array reply to this element first
	Int     int64
	String  string // the string, the error's class word, or the fence verdict
}

// Runtime is one probe run's view of a live server: a fresh scratch queue
// and fresh ids, resolved through Lookup.
type Runtime interface {
	// Lookup resolves a placeholder name (the text inside ${}), such as
	// queue, job, key:pending, row:job or reserve:locks.
	Lookup(name string) (string, bool)
	// RunScript runs the named script with its ARGV given by name.
	RunScript(ctx context.Context, script string, args map[string]string) rueidis.RedisResult
	// Do sends one command.
	Do(ctx context.Context, cmd []string) rueidis.RedisResult
	// ReplyElements names the elements of a script's array reply.
	ReplyElements(script string) []string
	// FenceAdmits reports whether this client's fence admits a version
	// record.
	FenceAdmits(record string) bool
	// Close removes everything the run wrote.
	Close(ctx context.Context) error
}

// Result is the outcome of one step.
type Result struct {
	Target string
	Check  string
	Err    error // nil when the check passed
}

// Transcript is the outcome of a run: one result per check.
type Transcript struct {
	Results []Result
}

// Passed counts the checks that passed.
func (t *Transcript) Passed() int {
	n := 0
	for _, r := range t.Results {
		if r.Err == nil {
			n++
		}
	}
	return n
}

// OK reports whether every check passed and there was at least one.
func (t *Transcript) OK() bool { return len(t.Results) > 0 && t.Passed() == len(t.Results) }

// Write prints the transcript, one line per check, ending PASS n/m.
func (t *Transcript) Write(w io.Writer) error {
	for _, r := range t.Results {
		line := fmt.Sprintf("ok    %s: %s", r.Target, r.Check)
		if r.Err != nil {
			line = fmt.Sprintf("FAIL  %s: %s: %v", r.Target, r.Check, r.Err)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "PASS %d/%d\n", t.Passed(), len(t.Results))
	return err
}

// String is the transcript as Write prints it.
func (t *Transcript) String() string {
	var b strings.Builder
	_ = t.Write(&b)
	return b.String()
}

// Run runs every probe, each on a fresh Runtime from open, and closes each
// runtime when its probe is done. A step that fails does not stop the
// probe; an error from open or Close is returned with the transcript so
// far.
func Run(ctx context.Context, probes []Probe, open func(context.Context) (Runtime, error)) (*Transcript, error) {
	t := &Transcript{}
	for _, p := range probes {
		rt, err := open(ctx)
		if err != nil {
			return t, fmt.Errorf("probe %s: %w", p.Target, err)
		}
		vars := map[string]string{}
		for _, s := range p.Steps {
			t.Results = append(t.Results, Result{Target: p.Target, Check: s.Check, Err: runStep(ctx, rt, vars, s)})
		}
		if err := rt.Close(ctx); err != nil {
			return t, fmt.Errorf("probe %s: cleaning up: %w", p.Target, err)
		}
	}
	return t, nil
}

var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// expand fills the placeholders of s from the run's saved values and the
// runtime.
func expand(rt Runtime, vars map[string]string, s string) (string, error) {
	var missing []string
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		if v, ok := vars[name]; ok {
			return v
		}
		if v, ok := rt.Lookup(name); ok {
			return v
		}
		missing = append(missing, name)
		return m
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unknown placeholder ${%s}", strings.Join(missing, "}, ${"))
	}
	return out, nil
}

func runStep(ctx context.Context, rt Runtime, vars map[string]string, s Step) error {
	var res rueidis.RedisResult
	switch {
	case s.Script != "":
		args := map[string]string{}
		for _, a := range s.With {
			v, err := expand(rt, vars, a.Value)
			if err != nil {
				return err
			}
			args[a.Name] = v
		}
		res = rt.RunScript(ctx, s.Script, args)
	case len(s.Command) > 0:
		cmd := make([]string, len(s.Command))
		for i, c := range s.Command {
			v, err := expand(rt, vars, c)
			if err != nil {
				return err
			}
			cmd[i] = v
		}
		res = rt.Do(ctx, cmd)
	default:
		return fmt.Errorf("the step runs nothing")
	}
	if err := res.NonRedisError(); err != nil {
		return err
	}
	msg, _ := res.ToMessage()
	if s.Save != "" {
		save(rt, vars, s, &msg)
	}
	if s.Expect.Element != "" {
		names := rt.ReplyElements(s.Script)
		arr, err := firstRecord(&msg).ToArray()
		if err != nil {
			return fmt.Errorf("want an array reply, got %s", describe(&msg))
		}
		i := indexOf(names, s.Expect.Element)
		if i < 0 || i >= len(arr) {
			return fmt.Errorf("the reply has no element %q", s.Expect.Element)
		}
		msg = arr[i]
	}
	return check(rt, vars, s.Expect, &msg)
}

// firstRecord narrows a repeated reply (an array of records, each an
// array) to its first record, which a step's element and save name; any
// other reply is returned as it is, and so is an empty one.
func firstRecord(msg *rueidis.RedisMessage) *rueidis.RedisMessage {
	if arr, err := msg.ToArray(); err == nil && len(arr) > 0 {
		if _, err := arr[0].ToArray(); err == nil {
			return &arr[0]
		}
	}
	return msg
}

func save(rt Runtime, vars map[string]string, s Step, msg *rueidis.RedisMessage) {
	if arr, err := firstRecord(msg).ToArray(); err == nil {
		for i, name := range rt.ReplyElements(s.Script) {
			if i < len(arr) {
				vars[s.Save+"."+name] = scalar(&arr[i])
			}
		}
		return
	}
	vars[s.Save] = scalar(msg)
}

func scalar(m *rueidis.RedisMessage) string {
	if n, err := m.AsInt64(); err == nil {
		return fmt.Sprint(n)
	}
	s, _ := m.ToString()
	return s
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// describe renders a reply for a failure message.
func describe(m *rueidis.RedisMessage) string {
	if err := m.Error(); err != nil {
		if rueidis.IsRedisNil(err) {
			return "nil"
		}
		return fmt.Sprintf("error %q", err.Error())
	}
	if arr, err := m.ToArray(); err == nil {
		parts := make([]string, len(arr))
		for i := range arr {
			parts[i] = describe(&arr[i])
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if n, err := m.ToInt64(); err == nil {
		return fmt.Sprintf("integer %d", n)
	}
	s, _ := m.ToString()
	return fmt.Sprintf("%q", s)
}

func check(rt Runtime, vars map[string]string, e Expect, m *rueidis.RedisMessage) error {
	got := describe(m)
	switch e.Kind {
	case "int":
		if n, err := m.ToInt64(); err != nil || n != e.Int {
			return fmt.Errorf("want integer %d, got %s", e.Int, got)
		}
	case "positive":
		if n, err := m.ToInt64(); err != nil || n <= 0 {
			return fmt.Errorf("want a positive integer, got %s", got)
		}
	case "string":
		want, err := expand(rt, vars, e.String)
		if err != nil {
			return err
		}
		if s, err := m.ToString(); err != nil || s != want {
			return fmt.Errorf("want %q, got %s", want, got)
		}
	case "nil":
		if !rueidis.IsRedisNil(m.Error()) {
			return fmt.Errorf("want nil, got %s", got)
		}
	case "error":
		err := m.Error()
		re, ok := rueidis.IsRedisErr(err)
		if !ok || re.IsNil() {
			return fmt.Errorf("want a %s refusal, got %s", e.String, got)
		}
		if word, _, _ := strings.Cut(re.Error(), " "); word != e.String {
			return fmt.Errorf("want a %s refusal, got %s", e.String, got)
		}
	case "fence":
		s, err := m.ToString()
		if err != nil || !rt.FenceAdmits(s) {
			return fmt.Errorf("want a version record this client's fence admits, got %s", got)
		}
	default:
		return fmt.Errorf("unknown expectation %q", e.Kind)
	}
	return nil
}

// The placeholder vocabulary of probe strings: ${queue}, ${version},
// ${semver}, ${bundle}, an id variable (a registered kind in lower case
// with an optional digit: ${job}, ${job2}, ${ord}), a saved reply
// (${c}, ${c.token}), and ${<kind>:<arg>} for the kinds below.
const (
	VarQueue   = "queue"   // the scratch queue's name
	VarVersion = "version" // this client's version record
	VarSemver  = "semver"  // this client's major.minor.patch
	VarBundle  = "bundle"  // this client's bundle digest

	KindKey     = "key"     // ${key:<type>}: a key of the scratch queue
	KindRow     = "row"     // ${row:<id variable>}: the row of an id
	KindReserve = "reserve" // ${reserve:<member>}: a reserve key
	KindField   = "field"   // ${field:<role>}: a row field's name
	KindState   = "state"   // ${state:<name>}: a state's value
)
