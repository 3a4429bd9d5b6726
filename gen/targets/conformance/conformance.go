// Package conformance is the target that writes the conformance suite's
// static vectors (conformance/vectors/*.json): cases that need no server,
// each an op of the testee contract (conformance/README.md) with its
// arguments and the result or error every SDK must give, computed from the
// resolved manifest by the model's reference implementations.
//
//   - ids.json: every id example and invalid example of the manifest, and
//     a few thousand seeded pseudo-random snowflakes (parse_id and new_id)
//     and malformed mutations of them;
//   - keys.json: queue keys and row keys for valid and hostile queue names
//     and ids, and every reserve member's key;
//   - errors.json: error replies classified into wire classes.
//
// The pseudo-random values come from a PCG generator with a fixed seed, so
// the files are byte-for-byte deterministic.
package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

// Dir is where the vectors are written, relative to the repository root.
const Dir = "conformance/vectors"

// RandomIDs is how many pseudo-random snowflakes ids.json holds.
const RandomIDs = 2000

// seed fixes the pseudo-random values; changing it rewrites ids.json.
const seed1, seed2 = 0x656d7167656e, 0x636f6e666f726d

// Target writes the static conformance vectors.
var Target = target.Func("conformance", Generate)

// File is the shape of every vector file.
type File struct {
	Generated string `json:"generated"`
	Protocol  string `json:"protocol"`
	Version   string `json:"version"`
	Summary   string `json:"summary"`
	Cases     []Case `json:"cases"`
}

// Case is one static case: an op, its arguments, and the result (a
// subset the testee's result must contain) or the error kind expected.
type Case struct {
	Name   string         `json:"name"`
	Op     string         `json:"op"`
	Args   map[string]any `json:"args"`
	Result map[string]any `json:"result,omitempty"`
	Error  *Error         `json:"error,omitempty"`
}

// Error is an expected error: its kind and, for wire errors, its class.
type Error struct {
	Kind  string `json:"kind"`
	Class string `json:"class,omitempty"`
}

// Generate returns errors.json, ids.json, versions.json and keys.json.
func Generate(in *target.Input) ([]target.File, error) {
	p := in.Protocol
	files := []struct {
		name, summary string
		cases         func(*model.Protocol) ([]Case, error)
	}{
		{"errors.json", "Error replies classified into wire classes: the first word is the class when it is a registered class word, exactly; anything else (ERR, other prefixes, near misses) is no class.", errorCases},
		{"ids.json", "The id canon: the manifest's id examples and invalid examples, seeded pseudo-random snowflakes (parse_id and new_id) and malformed mutations of them.", idCases},
		{"versions.json", "Version records judged against this version: current, ahead (a higher minor or patch of this major), behind (a lower one) or foreign (another major or protocol, or not a record: each part must be a canonical decimal, of any length). Every SDK's judgement and the fence script agree on each.", versionCases},
		{"keys.json", "Key building: every per-queue key and the row key for valid and hostile queue names and ids, and every reserve member's key.", keyCases},
	}
	var out []target.File
	for _, f := range files {
		cases, err := f.cases(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		if err := unique(cases); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		data, err := encode(File{Generated: header.Marker, Protocol: p.Name, Version: p.Version.String(), Summary: f.summary, Cases: cases})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		out = append(out, target.File{Path: Dir + "/" + f.name, Data: data})
	}
	return out, nil
}

func unique(cases []Case) error {
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.Name] {
			return fmt.Errorf("case name %q twice", c.Name)
		}
		seen[c.Name] = true
	}
	return nil
}

// encode writes a vector file with one case per line, so that a change to
// the manifest shows as a readable diff.
func encode(f File) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{\n")
	for _, kv := range [][2]string{{"generated", f.Generated}, {"protocol", f.Protocol}, {"version", f.Version}, {"summary", f.Summary}} {
		v, err := marshal(kv[1])
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "  %q: %s,\n", kv[0], v)
	}
	b.WriteString("  \"cases\": [\n")
	for i, c := range f.Cases {
		line, err := marshal(c)
		if err != nil {
			return nil, err
		}
		b.WriteString("    ")
		b.Write(line)
		if i < len(f.Cases)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes(), nil
}

// marshal is json.Marshal without HTML escaping (keys hold < and >) and
// without the trailing newline; map keys sort, so output is deterministic.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ---------------------------------------------------------------------------
// ids.json

func idCases(p *model.Protocol) ([]Case, error) {
	c := p.IDs
	var cases []Case
	epoch := c.Epoch.UnixMilli()
	for i, ex := range c.Examples {
		cases = append(cases, Case{
			Name: fmt.Sprintf("parse_id/example/%d", i), Op: "parse_id",
			Args:   map[string]any{"text": ex.ID},
			Result: map[string]any{"kind": ex.ID[:c.KindLength], "time_ms": ex.Time.UnixMilli(), "node": ex.Node, "sequence": ex.Sequence},
		})
		cases = append(cases, Case{
			Name: fmt.Sprintf("new_id/example/%d", i), Op: "new_id",
			Args:   map[string]any{"kind": ex.ID[:c.KindLength], "time_ms": ex.Time.UnixMilli(), "node": ex.Node, "sequence": ex.Sequence},
			Result: map[string]any{"text": ex.ID},
		})
	}
	for i, bad := range c.Invalid {
		cases = append(cases, Case{Name: fmt.Sprintf("parse_id/invalid/%d", i), Op: "parse_id", Args: map[string]any{"text": bad}, Error: &Error{Kind: "id"}})
	}
	tb, _ := c.Bitfield("time")
	nb, _ := c.Bitfield("node")
	sb, _ := c.Bitfield("sequence")
	if len(p.Kinds) == 0 || tb.Bits == 0 {
		return cases, nil
	}
	pack := func(t, n, s uint64) uint64 { return t<<tb.Shift | n<<nb.Shift | s<<sb.Shift }
	maxT, maxN, maxS := uint64(1)<<tb.Bits-1, uint64(1)<<nb.Bits-1, uint64(1)<<sb.Bits-1
	type snow struct{ t, n, s uint64 }
	// Edges first: the smallest and largest of every field.
	vals := []snow{{0, 0, 0}, {maxT, maxN, maxS}, {0, maxN, 0}, {0, 0, maxS}, {maxT, 0, 0}, {1, 1, 1}}
	rng := rand.New(rand.NewPCG(seed1, seed2))
	for len(vals) < RandomIDs {
		vals = append(vals, snow{rng.Uint64N(maxT + 1), rng.Uint64N(maxN + 1), rng.Uint64N(maxS + 1)})
	}
	for i, v := range vals {
		kind := p.Kinds[rng.IntN(len(p.Kinds))].Name
		text := c.FormatID(kind, pack(v.t, v.n, v.s))
		d, err := c.ParseID(text)
		if err != nil {
			return nil, fmt.Errorf("the reference parser refuses its own %s: %v", text, err)
		}
		facts := map[string]any{"kind": kind, "time_ms": epoch + int64(v.t), "node": d.Node, "sequence": d.Sequence}
		if d.Time.UnixMilli() != epoch+int64(v.t) || d.Node != int64(v.n) || d.Sequence != int64(v.s) {
			return nil, fmt.Errorf("the reference parser decodes %s to %+v, want %+v", text, d, v)
		}
		cases = append(cases, Case{Name: fmt.Sprintf("parse_id/random/%04d", i), Op: "parse_id", Args: map[string]any{"text": text}, Result: facts})
		args := map[string]any{"kind": kind, "time_ms": epoch + int64(v.t), "node": d.Node, "sequence": d.Sequence}
		cases = append(cases, Case{Name: fmt.Sprintf("new_id/random/%04d", i), Op: "new_id", Args: args, Result: map[string]any{"text": text}})
	}
	// Malformed mutations of random ids, each refused by the reference.
	outside := []string{"!", "-", "_", " ", "\x00", "\x7f", "+", "/", "=", "{", ":"}
	for i := 0; i < RandomIDs/4; i++ {
		v := vals[rng.IntN(len(vals))]
		kind := p.Kinds[rng.IntN(len(p.Kinds))].Name
		good := c.FormatID(kind, pack(v.t, v.n, v.s))
		var bad, why string
		switch i % 8 {
		case 0: // a kind byte in lower case
			j := rng.IntN(c.KindLength)
			bad, why = good[:j]+strings.ToLower(good[j:j+1])+good[j+1:], "lowercase-kind"
		case 1: // a body byte outside the alphabet
			j := c.KindLength + rng.IntN(c.BodyLength)
			bad, why = good[:j]+outside[rng.IntN(len(outside))]+good[j+1:], "outside-alphabet"
		case 2: // one byte short
			bad, why = good[:len(good)-1], "short"
		case 3: // one byte long
			bad, why = good+c.Alphabet[rng.IntN(len(c.Alphabet)):][:1], "long"
		case 4: // a digit in the kind
			j := rng.IntN(c.KindLength)
			bad, why = good[:j]+c.Alphabet[rng.IntN(10):][:1]+good[j+1:], "digit-kind"
		case 5: // the body above the snowflake: its top bit set
			bad, why = c.FormatID(kind, pack(v.t, v.n, v.s)|1<<63), "top-bit"
		case 6: // a non-ASCII byte pair in place of two body bytes
			j := c.KindLength + rng.IntN(c.BodyLength-1)
			bad, why = good[:j]+"é"+good[j+2:], "non-ascii"
		case 7: // surrounded by a space
			bad, why = " "+good[:len(good)-1], "leading-space"
		}
		if _, err := c.ParseID(bad); err == nil {
			continue // the mutation happened to stay valid
		}
		cases = append(cases, Case{Name: fmt.Sprintf("parse_id/mutated/%04d-%s", i, why), Op: "parse_id", Args: map[string]any{"text": bad}, Error: &Error{Kind: "id"}})
	}
	// The body overflowing 64 bits: the largest body there is.
	over := p.WorkKind().Name + strings.Repeat(c.Alphabet[len(c.Alphabet)-1:], c.BodyLength)
	if _, err := c.ParseID(over); err == nil {
		return nil, fmt.Errorf("the reference parser admits %s", over)
	}
	cases = append(cases, Case{Name: "parse_id/overflow/max-body", Op: "parse_id", Args: map[string]any{"text": over}, Error: &Error{Kind: "id"}})
	// new_id with a malformed kind.
	for i, k := range []string{"", strings.ToLower(p.WorkKind().Name), p.WorkKind().Name + "X", "J1B"} {
		cases = append(cases, Case{Name: fmt.Sprintf("new_id/bad-kind/%d", i), Op: "new_id", Args: map[string]any{"kind": k, "time_ms": epoch, "node": 0, "sequence": 0}, Error: &Error{Kind: "id"}})
	}
	return cases, nil
}

// ---------------------------------------------------------------------------
// keys.json

// hostileQueues are names every key builder must refuse, whatever the
// pattern (the model refuses a pattern that admits braces, colons,
// whitespace or the empty name); each is checked against the pattern too.
func hostileQueues(max int) []string {
	return []string{
		"", "{", "}", "a{b", "a}b", "{orders}", "a:b", ":", "orders:", "a b", " orders", "orders ",
		"a\tb", "a\nb", "a\rb", "a\x00b", "\x00", "a\x01b", "a\x7fb", "a\x1bb",
		"Orders", "ORDERS", "ordérs", "заказы", "訂單", "orders\u00a0", "o\u200brders", "😀",
		"-orders", ".orders", "_orders", "a/b", "a*b", "a?b", "a[b]", "a\\b", "a\"b", "a'b",
		strings.Repeat("a", max+1), strings.Repeat("a", 4*max),
	}
}

func keyCases(p *model.Protocol) ([]Case, error) {
	re, err := regexp.Compile("^(?:" + p.Queues.Pattern + ")$")
	if err != nil {
		return nil, err
	}
	valid := func(q string) bool { return len(q) <= p.Queues.MaxLength && re.MatchString(q) }
	queueClass, _ := p.KeyClass("queue")
	jobClass, _ := p.KeyClass("job")
	var types []string
	for _, t := range p.KeyTypes {
		if t.Class == queueClass.Name {
			types = append(types, t.Name)
		}
	}
	keysOf := func(q string) map[string]any {
		m := map[string]any{}
		for _, t := range types {
			m[t] = model.Shape(queueClass.Parts, map[string]string{"queue": q, "type": t})
		}
		return m
	}
	var cases []Case
	add := func(group string, i int, q string) {
		name := fmt.Sprintf("queue_keys/%s/%d", group, i)
		args := map[string]any{"queue": q, "types": types}
		if valid(q) {
			cases = append(cases, Case{Name: name, Op: "queue_keys", Args: args, Result: map[string]any{"keys": keysOf(q)}})
		} else {
			cases = append(cases, Case{Name: name, Op: "queue_keys", Args: args, Error: &Error{Kind: "queue_name"}})
		}
	}
	for i, q := range p.Queues.Examples {
		add("example", i, q)
	}
	for i, q := range p.Queues.Invalid {
		add("invalid", i, q)
	}
	for i, q := range hostileQueues(p.Queues.MaxLength) {
		if valid(q) {
			return nil, fmt.Errorf("the queue pattern admits the hostile name %q", q)
		}
		add("hostile", i, q)
	}
	// Edges the pattern admits: the longest name, one byte, every allowed
	// punctuation.
	for i, q := range []string{strings.Repeat("a", p.Queues.MaxLength), "0", "a.b", "a_b", "a-b", "a..b", "9-9_9.9"} {
		if valid(q) {
			add("edge", i, q)
		}
	}
	// Row keys: the manifest's ids of every kind (the key builder admits
	// any well-formed id; kind policy is the scripts'), and malformed ids.
	q := ""
	for _, cand := range append(append([]string{}, p.Queues.Examples...), "orders", "a", "0") {
		if valid(cand) {
			q = cand
			break
		}
	}
	if q == "" {
		return cases, nil
	}
	for i, ex := range p.IDs.Examples {
		cases = append(cases, Case{
			Name: fmt.Sprintf("queue_keys/row/%d", i), Op: "queue_keys",
			Args:   map[string]any{"queue": q, "types": types, "id": ex.ID},
			Result: map[string]any{"keys": keysOf(q), "row": model.Shape(jobClass.Parts, map[string]string{"queue": q, "id": ex.ID})},
		})
	}
	for i, bad := range p.IDs.Invalid {
		cases = append(cases, Case{Name: fmt.Sprintf("queue_keys/row-invalid/%d", i), Op: "queue_keys", Args: map[string]any{"queue": q, "types": types, "id": bad}, Error: &Error{Kind: "id"}})
	}
	// A hostile queue with a good id is refused for the queue.
	if len(p.IDs.Examples) > 0 {
		cases = append(cases, Case{Name: "queue_keys/row-hostile-queue", Op: "queue_keys", Args: map[string]any{"queue": "a{b}", "types": types, "id": p.IDs.Examples[0].ID}, Error: &Error{Kind: "queue_name"}})
	}
	// Reserve members.
	reserve, _ := p.KeyClass("reserve")
	for _, m := range p.Reserve {
		args := map[string]any{"member": m.Ident()}
		member := model.Shape(m.Parts, nil)
		if m.HasQueue() {
			args["queue"] = q
			member = model.Shape(m.Parts, map[string]string{"queue": q})
			cases = append(cases, Case{Name: "reserve_key/" + m.Ident() + "/hostile-queue", Op: "reserve_key", Args: map[string]any{"member": m.Ident(), "queue": "a:b"}, Error: &Error{Kind: "queue_name"}})
		}
		cases = append(cases, Case{Name: "reserve_key/" + m.Ident(), Op: "reserve_key", Args: args, Result: map[string]any{"key": model.Shape(reserve.Parts, map[string]string{"member": member})}})
	}
	return cases, nil
}

// ---------------------------------------------------------------------------
// errors.json

func errorCases(p *model.Protocol) ([]Case, error) {
	var cases []Case
	add := func(name, reply, class, message string) {
		cases = append(cases, Case{Name: "classify_error/" + name, Op: "classify_error", Args: map[string]any{"reply": reply}, Result: map[string]any{"class": class, "message": message}})
	}
	none := func(name, reply string) { add(name, reply, "", reply) }
	// Every refusal of every script, verbatim.
	for _, s := range p.Scripts {
		for _, r := range s.Refusals {
			add("refusal/"+s.Name+"/"+r.ID, r.Text(), r.Class, r.Message)
		}
	}
	for _, c := range p.Classes {
		w := c.Word
		add(c.Name+"/bare", w, w, "")
		add(c.Name+"/message", w+" something happened", w, "something happened")
		add(c.Name+"/two-spaces", w+"  two", w, " two")
		add(c.Name+"/trailing-space", w+" ", w, "")
		add(c.Name+"/carries-a-class", w+" "+w+" again", w, w+" again")
		none(c.Name+"/err-prefix", "ERR "+w+" wrapped in the generic prefix")
		none(c.Name+"/user-script", "ERR user_script:1: "+w+" raised with error() script: 0123456789abcdef, on @user_script:1.")
		none(c.Name+"/custom-prefix", "MYAPP "+w+" wrapped")
		none(c.Name+"/lower-case", strings.ToLower(w)+" lower")
		none(c.Name+"/longer-word", w+"X longer")
		none(c.Name+"/shorter-word", w[:len(w)-1]+" shorter")
		none(c.Name+"/prefixed-word", "X"+w+" prefixed")
		none(c.Name+"/leading-space", " "+w+" leading")
		none(c.Name+"/tab", w+"\tmessage")
		none(c.Name+"/newline", w+"\nmessage")
		none(c.Name+"/colon", w+": message")
	}
	for i, r := range []string{
		"ERR unknown command 'FOO'",
		"WRONGTYPE Operation against a key holding the wrong kind of value",
		"NOSCRIPT No matching script. Please use EVAL.",
		"MOVED 3999 127.0.0.1:6381",
		"ASK 3999 127.0.0.1:6381",
		"TRYAGAIN Multiple keys request during rehashing of slot",
		"BUSY Redis is busy running a script.",
		"NOPERM User has no permissions to run the 'evalsha' command",
		"OOM command not allowed when used memory > 'maxmemory'.",
		"ERR lease_ms is not an integer",
		"ERR Error running script (call to f_0123456789abcdef0123456789abcdef01234567): @user_script:3: user_script:3: bad",
		"",
		" ",
		"EMQ",
	} {
		none(fmt.Sprintf("other/%d", i), r)
	}
	return cases, nil
}

// versionCases are version records and this version's verdict on each:
// the canonical neighbours of this version, and the odd records that every
// client must judge as the fence script does (2.2.1).
func versionCases(p *model.Protocol) ([]Case, error) {
	v := p.Version
	record := p.VersionRecord()
	prefix, ok := strings.CutSuffix(record, v.String())
	if !ok {
		return nil, fmt.Errorf("the version record %q does not end in the version %s", record, v)
	}
	at := func(parts ...string) string { return prefix + strings.Join(parts, ".") }
	d := func(n int) string { return fmt.Sprint(n) }
	M, m, pa := d(v.Major), d(v.Minor), d(v.Patch)
	huge := "1" + strings.Repeat("0", 30)
	var cases []Case
	add := func(name, rec, verdict string) {
		cases = append(cases, Case{Name: "judge_version/" + name, Op: "judge_version", Args: map[string]any{"record": rec}, Result: map[string]any{"verdict": verdict}})
	}
	add("this", record, "current")
	add("higher-minor", at(M, d(v.Minor+1), "0"), "ahead")
	add("higher-patch", at(M, m, d(v.Patch+1)), "ahead")
	add("much-higher-minor", at(M, d(v.Minor+1000), pa), "ahead")
	add("huge-minor", at(M, huge, "0"), "ahead")
	add("huge-patch", at(M, m, huge), "ahead")
	if v.Minor > 0 {
		add("lower-minor", at(M, d(v.Minor-1), "0"), "behind")
		add("lower-minor-higher-patch", at(M, d(v.Minor-1), d(v.Patch+9)), "behind")
		add("lower-minor-padded-patch", at(M, d(v.Minor-1), "00"), "foreign")
	}
	if v.Patch > 0 {
		add("lower-patch", at(M, m, d(v.Patch-1)), "behind")
	}
	add("next-major", at(d(v.Major+1), "0", "0"), "foreign")
	if v.Major > 0 {
		add("prior-major", at(d(v.Major-1), m, pa), "foreign")
	}
	add("huge-major", at(huge, m, pa), "foreign")
	add("padded-major", at("0"+M, m, pa), "foreign")
	add("padded-minor", at(M, "0"+m, pa), "foreign")
	add("padded-patch", at(M, m, "0"+pa), "foreign")
	add("plus-minor", at(M, "+"+m, pa), "foreign")
	add("minus-patch", at(M, m, "-"+pa), "foreign")
	add("hex-minor", at(M, "0x"+m, pa), "foreign")
	add("exponent-minor", at(M, m+"e0", pa), "foreign")
	add("fullwidth-digit", at(M, m, string(rune('０'+v.Patch%10))), "foreign")
	add("two-parts", at(M, m), "foreign")
	add("four-parts", at(M, m, pa, "0"), "foreign")
	add("empty-part", at(M, "", pa), "foreign")
	add("trailing-space", record+" ", "foreign")
	add("leading-space", " "+record, "foreign")
	add("trailing-newline", record+"\n", "foreign")
	add("upper-case-prefix", strings.ToUpper(prefix)+v.String(), "foreign")
	add("other-protocol", "x"+record, "foreign")
	add("no-prefix", v.String(), "foreign")
	add("prefix-only", prefix, "foreign")
	add("empty", "", "foreign")
	add("garbage", "not a version", "foreign")
	return cases, nil
}
