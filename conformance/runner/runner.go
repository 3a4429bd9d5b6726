// Package runner is the EchoMQ conformance runner: it starts its own
// redis-server, builds and starts each language's testee (a long-lived
// process speaking JSON lines, conformance/README.md), runs the static
// vectors (conformance/vectors, generated from the manifest) and the live
// scenarios (conformance/scenarios, with placeholders resolved from the
// manifest) against it, checks every reply, typed error and keyspace, and
// reports PASS n/m per language with each failure — judged against the
// language's expected-failures list, where a listed case that passes is a
// failure too.
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
	"gopkg.in/yaml.v3"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// Language is one entry of conformance/languages.json.
type Language struct {
	Name string `json:"name"`
	// Build is run once from the repository root before the testee
	// starts; null when there is nothing to build. {bin} in an argument is
	// a scratch directory.
	Build []string `json:"build"`
	// Run starts the testee, from the repository root.
	Run []string `json:"run"`
}

// Options configure Run.
type Options struct {
	Root      string         // the repository root; default "."
	Languages []string       // names to run; all of languages.json when empty
	Match     *regexp.Regexp // run only the cases whose id matches; all when nil
	Verbose   bool           // name every case and show testee stderr
	Out       io.Writer      // the report; default os.Stdout
	Timeout   time.Duration  // per request; default 30s

	// Manifest is the manifest placeholders resolve from and hello is
	// checked against; default Root/protocol.yaml.
	Manifest string
	// Suite, when set, is run instead of the suite under Root/conformance.
	Suite *Suite
	// Testees, when set, are the languages to run instead of those of
	// languages.json (Languages still selects among them).
	Testees []Language
	// Addr, when set, is a server to run against (it is flushed before
	// every scenario) instead of one the runner starts.
	Addr string
	// NoExpected ignores the expected-failures lists: every failing case
	// is a failure.
	NoExpected bool
	// Trace records each language's wire trace (trace.go) from the
	// server's MONITOR feed and compares every language's with the first
	// one's, step by step: a step at which they differ is in the
	// language's TraceDiffs, and fails it.
	Trace bool
}

// Result is one language's outcome.
type Result struct {
	Language string `json:"language"`
	Passed   int    `json:"passed"`
	Total    int    `json:"total"`
	// Failures are the cases that failed and are not expected to.
	Failures []Failure `json:"failures"`
	// Expected are the listed cases that failed, as listed.
	Expected []Failure `json:"expected"`
	// Stale are listed cases that passed or that do not exist.
	Stale []string `json:"stale"`
	// TraceDiffs are the steps at which this language's wire trace
	// differs from the first language's (Options.Trace).
	TraceDiffs []TraceDiff `json:"trace_diffs,omitempty"`
	// TraceExpected counts the steps at which the trace differs as the
	// language's expected_trace_diffs list says it does.
	TraceExpected int `json:"trace_expected,omitempty"`
	// TesteeError is what went wrong with the testee's process rather
	// than with a case: it exited, stopped reading, did not answer a
	// request within the timeout or answered out of order (every case
	// after that failed for that reason), or it did not exit cleanly when
	// stopped at the end; nil when none of these happened. A result with
	// one is not the outcome of the cases alone (the witness does not
	// keep it).
	TesteeError error `json:"-"`
	// trace is the language's wire trace: "case step" → its script calls.
	trace map[string][]string
	// traceGaps are the cases in which the MONITOR feed was cut (a
	// scenario that kills the server's clients): not compared.
	traceGaps map[string]bool
}

// OK reports whether the language met its expected-failures list exactly.
func (r *Result) OK() bool {
	return len(r.Failures) == 0 && len(r.Stale) == 0 && len(r.TraceDiffs) == 0
}

// Conformant reports whether the language passed every case with an empty
// expected-failures list.
func (r *Result) Conformant() bool { return r.OK() && len(r.Expected) == 0 && r.Passed == r.Total }

// Failure is one failed case: which step, what was expected and got.
type Failure struct {
	Case    string `json:"case"`
	Step    int    `json:"step"` // 0-based; -1 for the case as a whole
	Op      string `json:"op"`   // the step's op or runner action
	Message string `json:"message"`
	// File and Line locate the failing step (or the scenario) in its
	// scenario file; empty and 0 for vectors and hello.
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

func (f Failure) String() string {
	if f.Step < 0 {
		return fmt.Sprintf("%s: %s", f.Case, f.Message)
	}
	return fmt.Sprintf("%s step %d (%s): %s", f.Case, f.Step+1, f.Op, f.Message)
}

// Suite is every case: the vectors and the scenarios.
type Suite struct {
	Vectors   []VectorFile
	Scenarios []ScenarioFile
}

// VectorFile is one file of conformance/vectors.
type VectorFile struct {
	Name      string // the file's stem
	Generated string `json:"generated"`
	Protocol  string `json:"protocol"`
	Version   string `json:"version"`
	Summary   string `json:"summary"`
	Cases     []Step `json:"cases"`
}

// ScenarioFile is one file of conformance/scenarios.
type ScenarioFile struct {
	Name      string // the file's stem
	Scenarios []Scenario
}

// Scenario is a live case: steps on a fresh keyspace.
type Scenario struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Covers  []string `json:"covers"`
	// Queue is what ${queue} names; default the manifest's first queue
	// example.
	Queue string `json:"queue"`
	// Connect is false for a scenario that connects itself, or the extra
	// arguments of the automatic connect (such as max_payload).
	Connect any    `json:"connect"`
	Steps   []Step `json:"steps"`
	raw     []any  // the steps as written, expanded when the scenario runs
	// File is the scenario's file; Line is where the scenario starts and
	// StepLines where each of its raw steps does.
	File      string   `json:"-"`
	Line      int      `json:"-"`
	StepLines [][2]int `json:"-"` // line and column of each raw step
	Column    int      `json:"-"`
}

// Step is one op sent to the testee, with what it must answer and leave
// behind, or a runner action (plant, del, sleep_ms).
type Step struct {
	Name   string         `json:"name"`
	Op     string         `json:"op"`
	Args   map[string]any `json:"args"`
	Result map[string]any `json:"result"`
	Error  map[string]any `json:"error"`
	Save   string         `json:"save"`
	// RetryConnection resends the op up to this many more times while the
	// testee answers with the connection kind (a command on a connection
	// the server closed), and judges the first other answer.
	RetryConnection int `json:"retry_connection"`
	// SendsNothing asserts that no command reached the server.
	SendsNothing bool `json:"sends_nothing"`
	// Keyspace is every per-queue key after the step (all of them unless
	// KeyspacePartial); KeyCount, when set, how many there are.
	Keyspace        map[string]any `json:"keyspace"`
	KeyspacePartial bool           `json:"keyspace_partial"`
	KeyCount        *int           `json:"key_count"`
	// Reserve lists reserve keys to check (null: absent).
	Reserve map[string]any `json:"reserve"`
	// Runner actions.
	Plant   map[string]any `json:"plant"`
	Del     []string       `json:"del"`
	SleepMS int            `json:"sleep_ms"`
	// Do sends one raw command from the runner's connection (such as
	// SCRIPT FLUSH), its arguments resolved.
	Do []string `json:"do"`
	// Mint mints ids for variables in this order (${job:v}), so that a
	// scenario can use them in another order than it minted them.
	Mint []string `json:"mint"`
	// Repeat and Foreach expand a step (see expand).
	Repeat  any    `json:"repeat"`
	Foreach string `json:"foreach"`

	raw int // the index of the raw step it was expanded from
}

func (s Step) label() string {
	switch {
	case s.Op != "":
		return s.Op
	case s.Plant != nil:
		return "plant"
	case s.Del != nil:
		return "del"
	case s.SleepMS > 0:
		return "sleep"
	case s.Mint != nil:
		return "mint ids"
	case s.Do != nil:
		return "do " + strings.Join(s.Do, " ")
	}
	return "check"
}

// sdkVectors are the files of conformance/vectors that are not the
// suite's cases: the schedules oracle's vectors (schedules.py writes
// schedules.json), which every SDK's scheduler unit tests read, since
// cron and the plan are pure functions no testee op needs to carry.
var sdkVectors = map[string]bool{"schedules.json": true}

// Load reads the suite under root/conformance.
func Load(root string) (*Suite, error) {
	dir := filepath.Join(root, "conformance")
	s := &Suite{}
	vectors, err := filepath.Glob(filepath.Join(dir, "vectors", "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(vectors)
	for _, file := range vectors {
		if sdkVectors[filepath.Base(file)] {
			continue
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		var vf VectorFile
		if err := decodeJSON(data, &vf); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		vf.Name = strings.TrimSuffix(filepath.Base(file), ".json")
		s.Vectors = append(s.Vectors, vf)
	}
	if s.Scenarios, err = LoadScenarios(filepath.Join(dir, "scenarios")); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadScenarios reads every scenario file (*.yaml) of dir, in the order
// their names sort.
func LoadScenarios(dir string) ([]ScenarioFile, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []ScenarioFile
	for _, file := range files {
		sf, err := loadScenarios(file)
		if err != nil {
			return nil, err
		}
		out = append(out, sf)
	}
	return out, nil
}

// loadScenarios reads one YAML file of scenarios: it expands repeated
// steps ({{i}} in every string), then decodes through JSON so that
// numbers keep their integer type.
func loadScenarios(file string) (ScenarioFile, error) {
	sf := ScenarioFile{Name: strings.TrimSuffix(filepath.Base(file), ".yaml")}
	data, err := os.ReadFile(file)
	if err != nil {
		return sf, err
	}
	var raw []map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return sf, fmt.Errorf("%s: %w", file, err)
	}
	lines := scenarioLines(data)
	seen := map[string]bool{}
	for i, r := range raw {
		steps, _ := r["steps"].([]any)
		b, err := json.Marshal(r)
		if err != nil {
			return sf, fmt.Errorf("%s: scenario %d: %w", file, i+1, err)
		}
		var sc Scenario
		if err := decodeJSON(b, &sc); err != nil {
			return sf, fmt.Errorf("%s: scenario %d: %w", file, i+1, err)
		}
		if sc.Name == "" || seen[sc.Name] {
			return sf, fmt.Errorf("%s: scenario %d: every scenario needs a name of its own (%q)", file, i+1, sc.Name)
		}
		seen[sc.Name] = true
		sc.raw = steps
		sc.File = file
		if i < len(lines) {
			sc.Line, sc.Column, sc.StepLines = lines[i].line, lines[i].col, lines[i].steps
		}
		sf.Scenarios = append(sf.Scenarios, sc)
	}
	return sf, nil
}

// scenarioLine is where a scenario and each of its steps start.
type scenarioLine struct {
	line, col int
	steps     [][2]int
}

// scenarioLines locates the scenarios of a file and their steps; a file
// that does not decode as a list of mappings locates nothing.
func scenarioLines(data []byte) []scenarioLine {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.SequenceNode {
		return nil
	}
	var out []scenarioLine
	for _, sc := range doc.Content[0].Content {
		l := scenarioLine{line: sc.Line, col: sc.Column}
		for i := 0; i+1 < len(sc.Content); i += 2 {
			if sc.Content[i].Value == "steps" && sc.Content[i+1].Kind == yaml.SequenceNode {
				for _, st := range sc.Content[i+1].Content {
					l.steps = append(l.steps, [2]int{st.Line, st.Column})
				}
			}
		}
		out = append(out, l)
	}
	return out
}

// expand turns a scenario's raw steps into steps: a step with repeat: n
// becomes n steps with {{i}} = 1..n in every string, one with foreach: a
// manifest list (ids.examples, ids.invalid, queues.examples,
// queues.invalid) one step per element with {{i}} its 0-based index and
// {{v}} its value.
func expand(raw []any, p *model.Protocol) ([]Step, error) {
	var steps []Step
	for n, st := range raw {
		m, _ := st.(map[string]any)
		var copies []any
		switch {
		case m["repeat"] != nil:
			count, ok := m["repeat"].(int)
			if !ok {
				c, isF := m["repeat"].(float64)
				if !isF {
					return nil, fmt.Errorf("step %d: repeat must be an integer", n+1)
				}
				count = int(c)
			}
			for j := 1; j <= count; j++ {
				copies = append(copies, substitute(st, map[string]string{"{{i}}": fmt.Sprint(j)}))
			}
		case m["foreach"] != nil:
			name, _ := m["foreach"].(string)
			var list []string
			switch name {
			case "ids.examples":
				for _, ex := range p.IDs.Examples {
					list = append(list, ex.ID)
				}
			case "ids.invalid":
				list = p.IDs.Invalid
			case "queues.examples":
				list = p.Queues.Examples
			case "queues.invalid":
				list = p.Queues.Invalid
			default:
				return nil, fmt.Errorf("step %d: foreach %q: want ids.examples, ids.invalid, queues.examples or queues.invalid", n+1, name)
			}
			for j, v := range list {
				copies = append(copies, substitute(st, map[string]string{"{{i}}": fmt.Sprint(j), "{{v}}": v}))
			}
		default:
			copies = []any{st}
		}
		for _, c := range copies {
			b, err := json.Marshal(c)
			if err != nil {
				return nil, fmt.Errorf("step %d: %w", n+1, err)
			}
			var s Step
			if err := decodeJSON(b, &s); err != nil {
				return nil, fmt.Errorf("step %d: %w", n+1, err)
			}
			s.raw = n
			steps = append(steps, s)
		}
	}
	return steps, nil
}

func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	return nil
}

// substitute replaces every key of subs by its value in every string (and
// object key) of v, and drops repeat and foreach.
func substitute(v any, subs map[string]string) any {
	switch x := v.(type) {
	case string:
		for old, new := range subs {
			x = strings.ReplaceAll(x, old, new)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k == "repeat" || k == "foreach" {
				continue
			}
			out[substitute(k, subs).(string)] = substitute(e, subs)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substitute(e, subs)
		}
		return out
	}
	return v
}

// LoadLanguages reads conformance/languages.json.
func LoadLanguages(root string) ([]Language, error) {
	data, err := os.ReadFile(filepath.Join(root, "conformance", "languages.json"))
	if err != nil {
		return nil, err
	}
	var f struct {
		Languages []Language `json:"languages"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("languages.json: %w", err)
	}
	return f.Languages, nil
}

// ExpectedFailures reads conformance/expected_failures/<lang>.txt: case
// ids, one a line; blank lines and # comments are ignored. A missing
// file is an empty list.
func ExpectedFailures(root, lang string) (map[string]bool, error) {
	return expectedList(filepath.Join(root, "conformance", "expected_failures", lang+".txt"))
}

// ExpectedTraceDiffs reads conformance/expected_trace_diffs/<lang>.txt:
// the steps ("case step", one a line, # comments) at which the language's
// wire trace is known to differ from the first language's. A missing file
// is an empty list.
func ExpectedTraceDiffs(root, lang string) (map[string]bool, error) {
	return expectedList(filepath.Join(root, "conformance", "expected_trace_diffs", lang+".txt"))
}

func expectedList(file string) (map[string]bool, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			out[line] = true
		}
	}
	return out, nil
}

// Run runs the suite for every selected language and writes the report.
// It returns every language's result; err is set when the suite could not
// run at all (no server, a testee that does not build).
func Run(ctx context.Context, opt Options) ([]*Result, error) {
	if opt.Root == "" {
		opt.Root = "."
	}
	if opt.Out == nil {
		opt.Out = os.Stdout
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 30 * time.Second
	}
	if opt.Manifest == "" {
		opt.Manifest = filepath.Join(opt.Root, "protocol.yaml")
	}
	p, err := model.Load(opt.Manifest)
	if err != nil {
		return nil, err
	}
	f, err := manifestFacts(p)
	if err != nil {
		return nil, err
	}
	suite := opt.Suite
	if suite == nil {
		if suite, err = Load(opt.Root); err != nil {
			return nil, err
		}
	}
	for _, vf := range suite.Vectors {
		if vf.Generated == "" {
			return nil, fmt.Errorf("conformance/vectors/%s.json has no generated header; regenerate with emqgen gen", vf.Name)
		}
	}
	langs := opt.Testees
	if langs == nil {
		if langs, err = LoadLanguages(opt.Root); err != nil {
			return nil, err
		}
	}
	if len(opt.Languages) > 0 {
		known := map[string]Language{}
		for _, l := range langs {
			known[l.Name] = l
		}
		var sel []Language
		for _, n := range opt.Languages {
			l, ok := known[n]
			if !ok {
				return nil, fmt.Errorf("no language %q among the testees (conformance/languages.json)", n)
			}
			sel = append(sel, l)
		}
		langs = sel
	}
	addr := opt.Addr
	if addr == "" {
		srv, err := redistest.StartServer()
		if err != nil {
			return nil, fmt.Errorf("no redis-server could be started: %w", err)
		}
		defer srv.Close()
		addr = srv.Addr()
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return nil, fmt.Errorf("the server at %s: %w", addr, err)
	}
	defer rc.Close()
	reserve, _ := p.KeyClass("reserve")
	s := &server{rc: rc, addr: addr, reserve: reserve.Parts[0].Lit, tracing: opt.Trace}
	if opt.Trace {
		if s.tracer, err = newTracer(p); err != nil {
			return nil, err
		}
	}
	var results []*Result
	for _, l := range langs {
		r, err := runLanguage(ctx, opt, l, suite, s, f)
		if err != nil {
			return results, fmt.Errorf("%s: %w", l.Name, err)
		}
		results = append(results, r)
	}
	if opt.Trace {
		byLang := map[string]*Result{}
		for _, r := range results {
			byLang[r.Language] = r
		}
		known := map[string]map[string]bool{}
		for _, r := range results[min(1, len(results)):] {
			known[r.Language] = map[string]bool{}
			if !opt.NoExpected {
				if known[r.Language], err = ExpectedTraceDiffs(opt.Root, r.Language); err != nil {
					return results, err
				}
			}
		}
		differs := map[string]map[string]bool{}
		for _, d := range compareTraces(results) {
			r, k := byLang[d.Language], d.Case+" "+strconv.Itoa(d.Step)
			if differs[d.Language] == nil {
				differs[d.Language] = map[string]bool{}
			}
			differs[d.Language][k] = true
			if known[d.Language][k] {
				r.TraceExpected++
				continue
			}
			r.TraceDiffs = append(r.TraceDiffs, d)
		}
		for _, r := range results[min(1, len(results)):] {
			for _, k := range slices.Sorted(maps.Keys(known[r.Language])) {
				if c, _ := splitStep(k); !differs[r.Language][k] && !results[0].traceGaps[c] && !r.traceGaps[c] {
					r.Stale = append(r.Stale, fmt.Sprintf("%s is listed in conformance/expected_trace_diffs/%s.txt but its wire trace is %s's; remove it from the list", k, r.Language, results[0].Language))
					fmt.Fprintf(opt.Out, "STALE %s\n", r.Stale[len(r.Stale)-1])
				}
			}
			for _, d := range r.TraceDiffs {
				fmt.Fprintf(opt.Out, "TRACE %s\n", d)
			}
			verdict := "identical to " + results[0].Language + "'s"
			switch {
			case len(r.TraceDiffs) > 0:
				verdict = fmt.Sprintf("DIFFERS from %s's at %d steps", results[0].Language, len(r.TraceDiffs))
			case r.TraceExpected > 0:
				verdict += fmt.Sprintf(" but at the %d steps of conformance/expected_trace_diffs/%s.txt", r.TraceExpected, r.Language)
			}
			fmt.Fprintf(opt.Out, "%s: wire trace %s (%d steps with script calls)\n", r.Language, verdict, len(r.trace))
		}
	}
	return results, nil
}

// ContractWords are names of the testee contract and of the scenario
// placeholders (conformance/README.md) that equal manifest names today;
// they are the contract's own and do not follow a rename in the manifest,
// so the no-literal scans of the runner and the testees allow them.
// "failures" is the op of the failures script (2.3.0) and the runner's
// result field; it equals the failures key type's name. Of 2.4.0:
// "results" (push_many's and add_many's result field), "progress",
// "events" and "counters" (ops and result fields) equal key type names,
// and "completed", "failed", "retried" and "dead" (the counters' result
// fields, get's completed) equal words of the event vocabulary and, for
// dead, a state. Of 2.6.0: "schedulers" (the scheduler ops' argument,
// list_schedulers' and due_schedulers' result field) equals the
// schedulers key type's name. Of 2.7.0: "policy" (the op reading a
// queue's policy through the SDK) equals the policy key type's name.
var ContractWords = []string{"payload", "state", "attempts", "bundle", "version", "row", "run_at_ms", "failures",
	"results", "progress", "events", "counters", "completed", "failed", "retried", "dead", "schedulers", "policy"}

// manifestFacts is what placeholders resolve from for p.
func manifestFacts(p *model.Protocol) (*facts, error) {
	b, err := bundle.Render(p)
	if err != nil {
		return nil, err
	}
	return &facts{p: p, bundle: b.Digest}, nil
}

// caseRun is one case to run: its id and how.
type caseRun struct {
	id       string
	scenario *Scenario
	vector   *Step
}

func (s *Suite) cases(match *regexp.Regexp) []caseRun {
	var out []caseRun
	keep := func(id string) bool { return match == nil || match.MatchString(id) }
	if keep("hello") {
		out = append(out, caseRun{id: "hello"})
	}
	for _, vf := range s.Vectors {
		for i := range vf.Cases {
			id := "vectors/" + vf.Name + "/" + vf.Cases[i].Name
			if keep(id) {
				out = append(out, caseRun{id: id, vector: &vf.Cases[i]})
			}
		}
	}
	for _, sf := range s.Scenarios {
		for i := range sf.Scenarios {
			id := "scenarios/" + sf.Name + "/" + sf.Scenarios[i].Name
			if keep(id) {
				out = append(out, caseRun{id: id, scenario: &sf.Scenarios[i]})
			}
		}
	}
	return out
}

// IDs returns the id of every case whose id match matches (all when
// match is nil), in the order the runner runs them.
func (s *Suite) IDs(match *regexp.Regexp) []string {
	var ids []string
	for _, c := range s.cases(match) {
		ids = append(ids, c.id)
	}
	return ids
}

// allIDs is every case id of the suite, for checking expected-failure
// lists.
func (s *Suite) allIDs() map[string]bool {
	ids := map[string]bool{}
	for _, c := range s.cases(nil) {
		ids[c.id] = true
	}
	return ids
}

func runLanguage(ctx context.Context, opt Options, l Language, suite *Suite, s *server, f *facts) (*Result, error) {
	started := time.Now()
	bin, err := os.MkdirTemp("", "emqconform-"+l.Name+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(bin)
	fill := func(argv []string) []string {
		out := make([]string, len(argv))
		for i, a := range argv {
			out[i] = strings.ReplaceAll(a, "{bin}", bin)
		}
		return out
	}
	if len(l.Build) > 0 {
		argv := fill(l.Build)
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = opt.Root
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building the testee (%s): %w\n%s", strings.Join(argv, " "), err, out)
		}
	}
	built := time.Now()
	var echo io.Writer
	if opt.Verbose {
		echo = os.Stderr
	}
	var mon *monitor
	var runnerAddrs map[string]bool
	if s.tracing {
		if runnerAddrs, err = s.clientAddrs(ctx); err != nil {
			return nil, err
		}
		if mon, err = startMonitor(s.addr); err != nil {
			return nil, fmt.Errorf("the wire trace: %w", err)
		}
	}
	proc, err := start(opt.Root, fill(l.Run), echo)
	if err != nil {
		return nil, err
	}
	expected := map[string]bool{}
	if !opt.NoExpected {
		if expected, err = ExpectedFailures(opt.Root, l.Name); err != nil {
			return nil, err
		}
	}
	r := &Result{Language: l.Name}
	all := suite.allIDs()
	for id := range expected {
		if !all[id] {
			r.Stale = append(r.Stale, fmt.Sprintf("%s is listed in conformance/expected_failures/%s.txt but is no case of the suite; remove it from the list", id, l.Name))
		}
	}
	cases := suite.cases(opt.Match)
	static := map[int]*Failure{} // the vectors' outcomes, run in pipelined batches
	ran := 0                     // vectors before this index have run
	for i, c := range cases {
		r.Total++
		var fail *Failure
		switch {
		case c.vector != nil:
			if i >= ran {
				j := i
				for j < len(cases) && cases[j].vector != nil && j-i < vectorBatch {
					j++
				}
				for k, f := range runStatic(ctx, proc, opt.Timeout, cases[i:j]) {
					static[i+k] = f
				}
				ran = j
			}
			fail = static[i]
		case c.scenario != nil:
			var trace io.Writer
			if opt.Verbose {
				trace = opt.Out
			}
			fail = runScenario(ctx, proc, opt.Timeout, s, f, c.id, c.scenario, trace)
		default:
			fail = runHello(ctx, proc, opt.Timeout, f)
		}
		switch {
		case fail == nil && expected[c.id]:
			r.Passed++
			r.Stale = append(r.Stale, fmt.Sprintf("%s passes but is listed in conformance/expected_failures/%s.txt; remove it from the list", c.id, l.Name))
		case fail == nil:
			r.Passed++
			if opt.Verbose {
				fmt.Fprintf(opt.Out, "ok    %s\n", c.id)
			}
		case expected[c.id]:
			r.Expected = append(r.Expected, *fail)
			if opt.Verbose {
				fmt.Fprintf(opt.Out, "XFAIL %s\n", fail)
			}
		default:
			r.Failures = append(r.Failures, *fail)
		}
	}
	stopErr := proc.stop()
	switch {
	case proc.dead != nil:
		r.TesteeError = proc.dead
	case stopErr != nil:
		r.TesteeError = fmt.Errorf("the testee exited with %w", stopErr)
	}
	if mon != nil {
		lines, err := mon.finish(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("the wire trace: %w", err)
		}
		now, err := s.now(ctx)
		if err != nil {
			return nil, err
		}
		r.trace, r.traceGaps = s.tracer.steps(lines, runnerAddrs, now)
	}
	for _, fl := range r.Failures {
		fmt.Fprintf(opt.Out, "FAIL  %s\n", fl)
	}
	for _, st := range r.Stale {
		fmt.Fprintf(opt.Out, "STALE %s\n", st)
	}
	if stopErr != nil && proc.dead == nil {
		fmt.Fprintf(opt.Out, "note: the %s testee exited with %v\n", l.Name, stopErr)
	}
	verdict := ""
	switch {
	case r.Conformant():
		verdict = ", conformant"
	case r.OK():
		verdict = fmt.Sprintf(", %d expected failures (not conformant)", len(r.Expected))
	}
	fmt.Fprintf(opt.Out, "%s: PASS %d/%d%s (build %.1fs, run %.1fs)\n", l.Name, r.Passed, r.Total, verdict, built.Sub(started).Seconds(), time.Since(built).Seconds())
	return r, nil
}

// runHello checks the testee's identity against the manifest.
func runHello(ctx context.Context, proc *process, timeout time.Duration, f *facts) *Failure {
	rep, err := proc.call(ctx, "hello", nil, timeout)
	if err != nil {
		return &Failure{Case: "hello", Step: 0, Op: "hello", Message: err.Error()}
	}
	want := map[string]any{"protocol": f.p.Name, "version": f.p.Version.String(), "bundle_digest": f.bundle}
	if msg := judge(rep, want, nil); msg != "" {
		return &Failure{Case: "hello", Step: 0, Op: "hello", Message: msg}
	}
	return nil
}

// vectorBatch is how many vectors are pipelined to a testee at once.
const vectorBatch = 256

// runStatic runs vectors, pipelined, and returns each one's failure (nil
// when it passed).
func runStatic(ctx context.Context, proc *process, timeout time.Duration, cases []caseRun) []*Failure {
	reqs := make([]request, len(cases))
	for i, c := range cases {
		reqs[i] = request{op: c.vector.Op, args: normalize(c.vector.Args).(map[string]any)}
	}
	out := make([]*Failure, len(cases))
	reps, err := proc.callMany(ctx, reqs, timeout)
	for i, c := range cases {
		st := *c.vector
		if err != nil {
			out[i] = &Failure{Case: c.id, Step: 0, Op: st.Op, Message: err.Error()}
			continue
		}
		var result, wantErr map[string]any
		if st.Result != nil {
			result = normalize(st.Result).(map[string]any)
		}
		if st.Error != nil {
			wantErr = normalize(st.Error).(map[string]any)
		}
		if msg := judge(reps[i], result, wantErr); msg != "" {
			out[i] = &Failure{Case: c.id, Step: 0, Op: st.Op, Message: fmt.Sprintf("args %s: %s", show(reqs[i].args), msg)}
		}
	}
	return out
}

// judge compares a reply with the expected result or error; "" when it
// matches. With neither expected, the op must succeed.
func judge(rep *Reply, result, wantErr map[string]any) string {
	if wantErr != nil {
		if rep.OK {
			return fmt.Sprintf("expected error %s, got result %s", show(wantErr), show(rep.Result))
		}
		got := map[string]any{}
		if rep.Error != nil {
			got = map[string]any{"kind": rep.Error.Kind, "class": rep.Error.Class, "message": rep.Error.Message}
		}
		if err := match(wantErr, got, "error"); err != nil {
			return fmt.Sprintf("%v (got error %s)", err, show(got))
		}
		return ""
	}
	if !rep.OK {
		e := ErrorReply{}
		if rep.Error != nil {
			e = *rep.Error
		}
		want := "success"
		if result != nil {
			want = "result " + show(result)
		}
		return fmt.Sprintf("expected %s, got error kind %q class %q: %s", want, e.Kind, e.Class, e.Message)
	}
	if result != nil {
		if err := match(result, rep.Result, "result"); err != nil {
			return fmt.Sprintf("%v (got result %s)", err, show(rep.Result))
		}
	}
	return ""
}

// runScenario runs one scenario on a fresh keyspace.
func runScenario(ctx context.Context, proc *process, timeout time.Duration, s *server, f *facts, id string, sc *Scenario, trace io.Writer) *Failure {
	whole := func(format string, a ...any) *Failure {
		return &Failure{Case: id, Step: -1, Message: fmt.Sprintf(format, a...), File: sc.File, Line: sc.Line, Column: sc.Column}
	}
	if err := s.flush(ctx); err != nil {
		return whole("flushing the server: %v", err)
	}
	queue := sc.Queue
	if queue == "" && len(f.p.Queues.Examples) > 0 {
		queue = f.p.Queues.Examples[0]
	}
	e := newEnv(f, queue, func() (int64, error) { return s.now(ctx) })
	steps, err := expand(sc.raw, f.p)
	if err != nil {
		return whole("%v", err)
	}
	if sc.Connect != false {
		args := map[string]any{}
		if m, ok := sc.Connect.(map[string]any); ok {
			args = normalize(m).(map[string]any)
		}
		steps = append([]Step{{Op: "connect", Args: args}}, steps...)
	}
	closed := false
	defer func() {
		if !closed && proc.dead == nil {
			_, _ = proc.call(ctx, "close", nil, timeout)
		}
		if trace != nil {
			fmt.Fprintf(trace, "  %s %s: closed\n", time.Now().Format("15:04:05.000"), id)
		}
	}()
	for i, st := range steps {
		if trace != nil {
			fmt.Fprintf(trace, "  %s %s: %s\n", time.Now().Format("15:04:05.000"), id, st.label())
		}
		n := i
		if sc.Connect != false {
			n = i - 1 // the automatic connect is step 0
		}
		line, col := sc.Line, sc.Column // the automatic connect: the scenario's own place
		if n >= 0 && st.raw < len(sc.StepLines) {
			line, col = sc.StepLines[st.raw][0], sc.StepLines[st.raw][1]
		}
		fail := func(format string, a ...any) *Failure {
			return &Failure{Case: id, Step: n, Op: st.label(), Message: fmt.Sprintf(format, a...), File: sc.File, Line: line, Column: col}
		}
		if s.tracing {
			if err := s.mark(ctx, id, n); err != nil {
				return fail("the wire trace's step marker: %v", err)
			}
		}
		switch {
		case st.Plant != nil:
			plant, err := e.resolve(normalize(st.Plant))
			if err != nil {
				return fail("%v", err)
			}
			for _, k := range sortedKeys(plant.(map[string]any)) {
				if err := s.plant(ctx, k, plant.(map[string]any)[k]); err != nil {
					return fail("%v", err)
				}
			}
		case st.Del != nil:
			for _, k := range st.Del {
				key, err := e.resolveString(k)
				if err != nil {
					return fail("%v", err)
				}
				if err := s.do(ctx, "DEL", fmt.Sprint(key)).Error(); err != nil {
					return fail("%v", err)
				}
			}
		case st.SleepMS > 0:
			time.Sleep(time.Duration(st.SleepMS) * time.Millisecond)
		case st.Do != nil:
			cmd := make([]string, len(st.Do))
			for i, a := range st.Do {
				v, err := e.resolveString(a)
				if err != nil {
					return fail("%v", err)
				}
				cmd[i] = fmt.Sprint(v)
			}
			if err := s.do(ctx, cmd...).Error(); err != nil {
				return fail("%s: %v", strings.Join(cmd, " "), err)
			}
		case st.Mint != nil:
			for _, v := range st.Mint {
				if _, err := e.id("job", v); err != nil {
					return fail("%v", err)
				}
			}
		case st.Op != "":
			ra, err := e.resolve(normalize(st.Args))
			if err != nil {
				return fail("%v", err)
			}
			args := ra.(map[string]any)
			if st.Op == "connect" {
				if _, ok := args["addr"]; !ok {
					args["addr"] = s.addr
				}
			}
			var result, wantErr map[string]any
			if st.Result != nil {
				r, err := e.resolve(normalize(st.Result))
				if err != nil {
					return fail("%v", err)
				}
				result = r.(map[string]any)
			}
			if st.Error != nil {
				r, err := e.resolve(normalize(st.Error))
				if err != nil {
					return fail("%v", err)
				}
				wantErr = r.(map[string]any)
			}
			var before map[string]int64
			if st.SendsNothing {
				if before, err = s.commandStats(ctx); err != nil {
					return fail("reading INFO commandstats: %v", err)
				}
			}
			rep, err := proc.call(ctx, st.Op, args, timeout)
			for retries := st.RetryConnection; err == nil && retries > 0 && !rep.OK && rep.Error != nil && rep.Error.Kind == "connection"; retries-- {
				time.Sleep(10 * time.Millisecond)
				rep, err = proc.call(ctx, st.Op, args, timeout)
			}
			if err != nil {
				return fail("%v", err)
			}
			if st.Op == "close" {
				closed = true
			}
			if msg := judge(rep, result, wantErr); msg != "" {
				return fail("args %s: %s", show(args), msg)
			}
			if st.SendsNothing {
				after, err := s.commandStats(ctx)
				if err != nil {
					return fail("reading INFO commandstats: %v", err)
				}
				if sent := sentBetween(before, after); len(sent) > 0 {
					return fail("args %s: refused, but the server received %s", show(args), strings.Join(sent, ", "))
				}
			}
			if st.Save != "" {
				e.saved[st.Save] = rep.Result
			}
		}
		if st.Keyspace != nil || st.KeyCount != nil {
			want := map[string]any{}
			if st.Keyspace != nil {
				w, err := e.resolve(normalize(st.Keyspace))
				if err != nil {
					return fail("%v", err)
				}
				want = w.(map[string]any)
			}
			count := -1
			if st.KeyCount != nil {
				count = *st.KeyCount
			}
			if problems := s.checkKeyspace(ctx, want, st.KeyspacePartial || st.Keyspace == nil, count); len(problems) > 0 {
				return fail("%s", strings.Join(problems, "; "))
			}
		}
		if st.Reserve != nil {
			w, err := e.resolve(normalize(st.Reserve))
			if err != nil {
				return fail("%v", err)
			}
			if problems := s.checkKeys(ctx, w.(map[string]any), "reserve"); len(problems) > 0 {
				return fail("%s", strings.Join(problems, "; "))
			}
		}
	}
	return nil
}
