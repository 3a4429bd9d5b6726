package model

import (
	"fmt"
	"math"
	"math/big"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/echomq/echomq/gen/manifest"
)

// Load reads, validates and resolves the manifest at path. Its error is a
// *manifest.Errors listing every problem as file:line:col: message.
func Load(path string) (*Protocol, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse validates and resolves a manifest held in memory. A shape error in
// one section does not hide the problems of the others: every section
// whose shape is sound, and whose sections it refers to are sound, is
// still resolved and checked, and all the errors are returned together.
func Parse(file string, data []byte) (*Protocol, error) {
	m, broken, err := manifest.ParsePartial(file, data)
	if m == nil {
		return nil, err
	}
	p, rerr := resolve(file, m, broken)
	if err == nil {
		return p, rerr
	}
	all := err.(*manifest.Errors)
	if rerr != nil {
		all.List = append(all.List, rerr.(*manifest.Errors).List...)
	}
	return nil, all.Err()
}

// Resolve checks every cross-reference of m and builds the model. It
// reports all problems it finds, not the first.
func Resolve(file string, m *manifest.Manifest) (*Protocol, error) {
	return resolve(file, m, nil)
}

// steps are the resolver's passes in order: the sections each needs whole
// (its own and those it refers to) and the section it resolves. A pass
// runs only when none of the sections it needs is broken or left
// unresolved, so that a broken section produces its shape errors and no
// cascade of false ones.
var steps = []struct {
	resolves string
	needs    []string
	run      func(*resolver)
}{
	{"version", []string{"protocol", "version"}, (*resolver).header},
	{"ids", []string{"ids"}, (*resolver).ids},
	{"kinds", []string{"ids", "kinds"}, (*resolver).kinds},
	{"queues", []string{"queues"}, (*resolver).queues},
	{"keys", []string{"keys"}, (*resolver).keys},
	{"row", []string{"keys", "row"}, (*resolver).row},
	{"sets", []string{"keys", "row", "sets"}, (*resolver).sets},
	{"reserve", []string{"protocol", "version", "reserve"}, (*resolver).reserve},
	{"classes", []string{"classes"}, (*resolver).classes},
	{"vocabularies", []string{"vocabularies"}, (*resolver).vocabularies},
	{"snippets", []string{"snippets"}, (*resolver).snippets},
	{"scripts", []string{"ids", "kinds", "keys", "row", "reserve", "classes", "vocabularies", "snippets", "scripts"}, (*resolver).scripts},
	{"probes", []string{"ids", "kinds", "queues", "keys", "row", "sets", "reserve", "classes", "scripts"}, (*resolver).probes},
	{"governance", []string{"version", "governance"}, (*resolver).governance},
	{"retired", []string{"version", "kinds", "keys", "row", "sets", "reserve", "classes", "scripts", "retired"}, (*resolver).lifecycle},
}

func resolve(file string, m *manifest.Manifest, broken manifest.Broken) (*Protocol, error) {
	r := &resolver{m: m, errs: &manifest.Errors{File: file}, p: &Protocol{File: file, Source: m}}
	unresolved := map[string]bool{}
	for name := range broken {
		unresolved[name] = true
	}
	for _, s := range steps {
		if slices.ContainsFunc(s.needs, func(n string) bool { return unresolved[n] }) {
			unresolved[s.resolves] = true
			continue
		}
		s.run(r)
	}
	if err := r.errs.Err(); err != nil {
		return nil, err
	}
	return r.p, nil
}

type resolver struct {
	m    *manifest.Manifest
	p    *Protocol
	errs *manifest.Errors
}

func (r *resolver) errf(pos manifest.Pos, format string, args ...any) {
	r.errs.Addf(pos, format, args...)
}

var (
	identRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	wordRE  = regexp.MustCompile(`^[A-Z][A-Z0-9]*$`)
)

// unique reports a duplicate name at its second occurrence.
type unique struct {
	what string
	seen map[string]manifest.Pos
	r    *resolver
}

func (r *resolver) unique(what string) *unique {
	return &unique{what: what, seen: map[string]manifest.Pos{}, r: r}
}

func (u *unique) add(s manifest.Str) bool {
	if first, dup := u.seen[s.V]; dup {
		u.r.errf(s.Pos, "%s %q is declared twice (first at line %d)", u.what, s.V, first.Line)
		return false
	}
	u.seen[s.V] = s.Pos
	return true
}

func (u *unique) names() string {
	var n []string
	for k := range u.seen {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func (r *resolver) ident(s manifest.Str, what string) {
	if !identRE.MatchString(s.V) {
		r.errf(s.Pos, "%s %q must be a lower-case identifier ([a-z][a-z0-9_]*)", what, s.V)
	}
}

func (r *resolver) header() {
	m, p := r.m, r.p
	p.Name = m.Protocol.V
	r.ident(m.Protocol, "protocol name")
	v, err := ParseSemver(m.Version.V)
	if err != nil {
		r.errf(m.Version.Pos, "version: %v", err)
	}
	p.Version = v
	p.Summary = m.Summary.V
	p.Server = m.Server.V
}

func (r *resolver) ids() {
	in, c := r.m.IDs, &r.p.IDs
	before := len(r.errs.List) // the examples need a sound canon, not a sound manifest
	c.Length, c.KindLength, c.BodyLength = int(in.Length.V), int(in.Kind.Length.V), int(in.Body.Length.V)
	c.KindPattern, c.Encoding, c.Alphabet = in.Kind.Pattern.V, in.Body.Encoding.V, in.Body.Alphabet.V
	c.BodySummary, c.Uniqueness = in.Body.Summary.V, in.Uniqueness.V
	if c.Length != c.KindLength+c.BodyLength {
		r.errf(in.Length.Pos, "ids.length %d is not kind.length %d + body.length %d", c.Length, c.KindLength, c.BodyLength)
	}
	if c.KindLength < 1 || c.BodyLength < 1 || c.KindLength > maxIDPart || c.BodyLength > maxIDPart {
		r.errf(in.Pos, "ids: kind and body lengths must be 1..%d", maxIDPart)
		return
	}
	if re, err := anchored(c.KindPattern); err != nil {
		r.errf(in.Kind.Pattern.Pos, "ids.kind.pattern: %v", err)
	} else {
		for _, probe := range []string{strings.Repeat("A", c.KindLength), strings.Repeat("Z", c.KindLength)} {
			if !re.MatchString(probe) {
				r.errf(in.Kind.Pattern.Pos, "ids.kind.pattern %q must admit every %d ASCII capitals (refuses %q)", c.KindPattern, c.KindLength, probe)
			}
		}
		for _, bad := range []string{strings.Repeat("a", c.KindLength), strings.Repeat("A", c.KindLength+1), strings.Repeat("0", c.KindLength)} {
			if re.MatchString(bad) {
				r.errf(in.Kind.Pattern.Pos, "ids.kind.pattern %q admits %q; a kind is exactly %d ASCII capitals", c.KindPattern, bad, c.KindLength)
			}
		}
	}
	if c.Encoding != "base62" {
		r.errf(in.Body.Encoding.Pos, "ids.body.encoding %q is not supported (supported: base62)", c.Encoding)
	}
	if len(c.Alphabet) != 62 {
		r.errf(in.Body.Alphabet.Pos, "ids.body.alphabet has %d symbols; base62 needs 62", len(c.Alphabet))
	}
	for i := 1; i < len(c.Alphabet); i++ {
		if c.Alphabet[i] <= c.Alphabet[i-1] {
			r.errf(in.Body.Alphabet.Pos, "ids.body.alphabet must be in strictly ascending ASCII order so that byte order is numeric order (%q at %d is not above %q)", c.Alphabet[i], i, c.Alphabet[i-1])
			break
		}
	}
	epoch, err := time.Parse(time.RFC3339Nano, in.Snowflake.Epoch.V)
	if err != nil {
		r.errf(in.Snowflake.Epoch.Pos, "ids.snowflake.epoch %q is not an RFC 3339 time", in.Snowflake.Epoch.V)
	}
	c.Epoch = epoch.UTC()
	total := 0
	names := r.unique("snowflake field")
	for _, b := range in.Snowflake.Layout {
		names.add(b.Name)
		if b.Bits.V < 1 || b.Bits.V > 63 {
			r.errf(b.Bits.Pos, "snowflake field %q: bits must be 1..63", b.Name.V)
		}
		total += int(b.Bits.V)
		c.Layout = append(c.Layout, Bitfield{Name: b.Name.V, Bits: int(b.Bits.V), Summary: b.Summary.V})
	}
	if total != 64 {
		pos := in.Snowflake.Pos
		if len(in.Snowflake.Layout) > 0 {
			pos = in.Snowflake.Layout[0].Pos
		}
		r.errf(pos, "ids.snowflake.layout adds up to %d bits; it must be 64", total)
		return
	}
	shift := 64
	for i := range c.Layout {
		shift -= c.Layout[i].Bits
		c.Layout[i].Shift = shift
	}
	for _, need := range []string{"time", "node", "sequence"} {
		if _, ok := c.Bitfield(need); !ok {
			r.errf(in.Snowflake.Pos, "ids.snowflake.layout has no %q field (it needs time, node and sequence)", need)
		}
	}
	if c.Layout[0].Name != "zero" {
		r.errf(in.Snowflake.Layout[0].Name.Pos, "ids.snowflake.layout must start with the zero field that keeps the value a positive int64")
	}
	if len(c.Alphabet) == 62 {
		capacity := new(big.Int).Exp(big.NewInt(62), big.NewInt(int64(c.BodyLength)), nil)
		if capacity.Cmp(new(big.Int).Lsh(big.NewInt(1), 63)) < 0 {
			r.errf(in.Body.Length.Pos, "ids.body.length %d cannot hold a 63-bit snowflake in base62", c.BodyLength)
		}
	}
	if len(r.errs.List) > before {
		return
	}
	for _, ex := range in.Examples {
		want, err := time.Parse(time.RFC3339Nano, ex.Time.V)
		if err != nil {
			r.errf(ex.Time.Pos, "example %q: time %q is not an RFC 3339 time", ex.ID.V, ex.Time.V)
			continue
		}
		d, err := c.ParseID(ex.ID.V)
		if err != nil {
			r.errf(ex.ID.Pos, "example: %v", err)
			continue
		}
		if !d.Time.Equal(want) || d.Node != ex.Node.V || d.Sequence != ex.Sequence.V {
			r.errf(ex.ID.Pos, "example %q decodes to time %s node %d sequence %d, not time %s node %d sequence %d",
				ex.ID.V, d.Time.Format(time.RFC3339Nano), d.Node, d.Sequence, want.UTC().Format(time.RFC3339Nano), ex.Node.V, ex.Sequence.V)
		}
		c.Examples = append(c.Examples, IDExample{ID: ex.ID.V, Time: want.UTC(), Node: ex.Node.V, Sequence: ex.Sequence.V})
	}
	for _, bad := range in.InvalidExamples {
		if _, err := c.ParseID(bad.V); err == nil {
			r.errf(bad.Pos, "invalid example %q parses as an id", bad.V)
		}
		c.Invalid = append(c.Invalid, bad.V)
	}
}

// maxIDPart bounds the kind and body lengths, so that checking them stays
// cheap.
const maxIDPart = 64

func (r *resolver) kinds() {
	names := r.unique("kind")
	re, _ := anchored(r.p.IDs.KindPattern)
	var work []manifest.Kind
	for _, k := range r.m.Kinds {
		names.add(k.Name)
		if re != nil && !re.MatchString(k.Name.V) {
			r.errf(k.Name.Pos, "kind %q does not match ids.kind.pattern %q", k.Name.V, r.p.IDs.KindPattern)
		}
		if k.Work.V {
			if len(work) > 0 {
				r.errf(k.Work.Pos, "kinds %q and %q are both work: true; exactly one kind is the work kind (the only kind admitted in the job position)", work[0].Name.V, k.Name.V)
			}
			work = append(work, k)
		}
		r.p.Kinds = append(r.p.Kinds, Kind{Name: k.Name.V, Work: k.Work.V, Summary: k.Summary.V})
	}
	if len(work) == 0 {
		pos := r.m.Pos
		if len(r.m.Kinds) > 0 {
			pos = r.m.Kinds[0].Pos
		}
		r.errf(pos, "kinds: no kind is the work kind; mark the one admitted in the job position with work: true")
	}
}

// hostileQueueNames must be refused by every queue grammar: each would
// break the key grammar or the hashtag.
var hostileQueueNames = []string{"", "a{b", "a}b", "a:b", "a b", "a\nb", "{emq}"}

func (r *resolver) queues() {
	in, q := r.m.Queues, &r.p.Queues
	q.Pattern, q.Summary = in.Pattern.V, in.Summary.V
	re, err := anchored(q.Pattern)
	if err != nil {
		r.errf(in.Pattern.Pos, "queues.pattern: %v", err)
		return
	}
	for _, h := range hostileQueueNames {
		if re.MatchString(h) {
			r.errf(in.Pattern.Pos, "queues.pattern %q admits %q, which breaks the key grammar (no braces, colons, whitespace or empty names)", q.Pattern, h)
		}
	}
	syn, _ := regexpMaxLen(q.Pattern)
	q.MaxLength = syn
	if syn < 0 {
		r.errf(in.Pattern.Pos, "queues.pattern %q must bound the name's length", q.Pattern)
	}
	for _, ex := range in.Examples {
		if !re.MatchString(ex.V) {
			r.errf(ex.Pos, "queue example %q does not match queues.pattern", ex.V)
		}
		q.Examples = append(q.Examples, ex.V)
	}
	for _, ex := range in.InvalidExamples {
		if re.MatchString(ex.V) {
			r.errf(ex.Pos, "invalid queue example %q matches queues.pattern", ex.V)
		}
		q.Invalid = append(q.Invalid, ex.V)
	}
}

// shapeRE splits a key shape into literals and <holes>.
var shapeRE = regexp.MustCompile(`<([a-z]+)>`)

func parseShape(shape string) []Part {
	var parts []Part
	last := 0
	for _, loc := range shapeRE.FindAllStringSubmatchIndex(shape, -1) {
		if loc[0] > last {
			parts = append(parts, Part{Lit: shape[last:loc[0]]})
		}
		parts = append(parts, Part{Hole: shape[loc[2]:loc[3]]})
		last = loc[1]
	}
	if last < len(shape) {
		parts = append(parts, Part{Lit: shape[last:]})
	}
	return parts
}

func holes(parts []Part) []string {
	var h []string
	for _, p := range parts {
		if p.Hole != "" {
			h = append(h, p.Hole)
		}
	}
	return h
}

// keyClassHoles are the holes each class of the closed grammar must have,
// in order.
var keyClassHoles = map[string][]string{
	"queue":   {"queue", "type"},
	"job":     {"queue", "id"},
	"reserve": {"member"},
}

// literalHashtag reports whether prefix holds a non-empty {...}: the
// hashtag Redis Cluster hashes instead of the whole key.
func literalHashtag(prefix string) bool {
	open := strings.IndexByte(prefix, '{')
	return open >= 0 && strings.IndexByte(prefix[open+1:], '}') > 0
}

var redisTypes = map[string]bool{"string": true, "hash": true, "zset": true, "set": true, "list": true, "stream": true}

func (r *resolver) keys() {
	names := r.unique("key class")
	for _, c := range r.m.Keys.Classes {
		names.add(c.Name)
		want, ok := keyClassHoles[c.Name.V]
		if !ok {
			r.errf(c.Name.Pos, "key class %q is not one of the grammar's three classes (queue, job, reserve)", c.Name.V)
			continue
		}
		parts := parseShape(c.Shape.V)
		if got := holes(parts); strings.Join(got, ",") != strings.Join(want, ",") {
			r.errf(c.Shape.Pos, "key class %q: shape %q must have the holes <%s> in that order", c.Name.V, c.Shape.V, strings.Join(want, ">, <"))
			continue
		}
		if parts[0].Lit == "" {
			r.errf(c.Shape.Pos, "key class %q: shape %q must begin with a literal prefix", c.Name.V, c.Shape.V)
			continue
		}
		if tag := strings.Index(c.Shape.V, "{<queue>}"); c.Name.V != "reserve" && (tag < 0 || strings.IndexByte(c.Shape.V, '{') != tag) {
			r.errf(c.Shape.Pos, "key class %q: shape %q: the queue must be the key's hashtag (its first {...} must be {<queue>}) so that a queue's keys share one slot", c.Name.V, c.Shape.V)
			continue
		}
		if c.Name.V == "reserve" && !literalHashtag(parts[0].Lit) {
			r.errf(c.Shape.Pos, "key class %q: shape %q must begin with a literal hashtag (like {emq}) before <member>, so that all reserve members share one slot", c.Name.V, c.Shape.V)
			continue
		}
		r.p.KeyClasses = append(r.p.KeyClasses, KeyClass{Name: c.Name.V, Shape: c.Shape.V, Parts: parts, Summary: c.Summary.V})
	}
	for name := range keyClassHoles {
		if _, ok := r.p.KeyClass(name); !ok && names.seen[name] == (manifest.Pos{}) {
			r.errf(r.m.Keys.Pos, "keys.classes: the %q class is missing", name)
		}
	}
	shapePos := func(name string) manifest.Pos {
		for _, c := range r.m.Keys.Classes {
			if c.Name.V == name {
				return c.Shape.Pos
			}
		}
		return r.m.Keys.Pos
	}
	if q, ok := r.p.KeyClass("queue"); ok {
		if res, ok := r.p.KeyClass("reserve"); ok && q.Parts[0].Lit[0] == res.Parts[0].Lit[0] {
			r.errf(shapePos("reserve"), "key class \"reserve\": reserve keys (%q) and per-queue keys (%q) must differ at the first byte", res.Parts[0].Lit, q.Parts[0].Lit)
		}
		if j, ok := r.p.KeyClass("job"); ok && q.Parts[0].Lit != j.Parts[0].Lit {
			r.errf(shapePos("job"), "key class \"job\": job keys (%q) must share the per-queue prefix %q", j.Parts[0].Lit, q.Parts[0].Lit)
		}
	}
	types := r.unique("key type")
	for _, t := range r.m.Keys.Types {
		types.add(t.Name)
		r.ident(t.Name, "key type")
		if t.Class.V != "queue" && t.Class.V != "job" {
			r.errf(t.Class.Pos, "key type %q: class %q must be queue or job (reserve keys are declared under reserve)", t.Name.V, t.Class.V)
		}
		if !redisTypes[t.Redis.V] && t.Redis.V != "channel" {
			// A channel (sharded pub/sub, 2.5.0) is named by the key
			// grammar and declared in KEYS like a key, so that it lives
			// in the queue's slot, but holds nothing in the keyspace.
			r.errf(t.Redis.Pos, "key type %q: redis type %q is not one of string, hash, zset, set, list, stream, channel", t.Name.V, t.Redis.V)
		}
		r.p.KeyTypes = append(r.p.KeyTypes, KeyType{Name: t.Name.V, Class: t.Class.V, Redis: t.Redis.V, Summary: t.Summary.V})
	}
	// Tripwires are resolved with the key types, before any body renders
	// ({{at}}, {{aware}} and the guard read them).
	for _, t := range r.m.Keys.Types {
		r.tripwire(t, t.Duty.V)
	}
	jobs := 0
	for _, t := range r.p.KeyTypes {
		if t.Class == "job" {
			jobs++
		}
	}
	if jobs != 1 {
		r.errf(r.m.Keys.Pos, "keys.types: exactly one key type of class job (the row) is allowed; found %d", jobs)
	}
}

var roles = []string{"state", "token", "payload"}

var encodings = map[string]string{"state": "state", "token": "decimal", "payload": "bytes"}

func (r *resolver) row() {
	in, row := r.m.Row, &r.p.Row
	row.Key, row.Summary = in.Key.V, in.Summary.V
	if t, ok := r.p.KeyType(in.Key.V); !ok || t.Class != "job" || t.Redis != "hash" {
		r.errf(in.Key.Pos, "row.key %q must name the key type of class job with redis type hash", in.Key.V)
	}
	names, rs := r.unique("row field"), r.unique("row field role")
	for _, f := range in.Fields {
		names.add(f.Name)
		rs.add(f.Role)
		want, ok := encodings[f.Role.V]
		if !ok {
			r.errf(f.Role.Pos, "row field %q: role %q is not one of state, token, payload", f.Name.V, f.Role.V)
		} else if f.Encoding.V != want {
			r.errf(f.Encoding.Pos, "row field %q: the %s field's encoding must be %q, not %q", f.Name.V, f.Role.V, want, f.Encoding.V)
		}
		if f.Name.V == "" || strings.ContainsAny(f.Name.V, "' \n\\") {
			r.errf(f.Name.Pos, "row field name %q must be non-empty without quotes, spaces or backslashes", f.Name.V)
		}
		fld := Field{Name: f.Name.V, Role: f.Role.V, Encoding: f.Encoding.V, Summary: f.Summary.V}
		if f.Initial != nil {
			fld.Initial = f.Initial.V
		}
		if f.Role.V == "token" && fld.Initial != "0" {
			pos := f.Pos
			if f.Initial != nil {
				pos = f.Initial.Pos
			}
			r.errf(pos, "row field %q: the token field starts at 0 at admission (initial: \"0\"), not %q", f.Name.V, fld.Initial)
		}
		row.Fields = append(row.Fields, fld)
	}
	for _, role := range roles {
		if _, ok := rs.seen[role]; !ok {
			r.errf(in.Pos, "row: no field has the %s role (a row has state, token and payload)", role)
		}
	}
	states := r.unique("state")
	for _, s := range in.States {
		states.add(s.Name)
		r.ident(s.Name, "state")
		if s.Name.V == None {
			r.errf(s.Name.Pos, "state %q is reserved for the absence of a row", None)
		}
		row.States = append(row.States, State{Name: s.Name.V, Set: s.Set.V, Summary: s.Summary.V})
	}
}

var scoreKinds = map[string]bool{"zero": true, "lease_deadline_ms": true, "run_at_ms": true}

func (r *resolver) sets() {
	r.p.Invariant = r.m.Sets.Invariant.V
	keys := r.unique("set")
	for _, s := range r.m.Sets.List {
		keys.add(s.Key)
		if t, ok := r.p.KeyType(s.Key.V); !ok {
			r.errf(s.Key.Pos, "set %q is not a declared key type", s.Key.V)
		} else if t.Class != "queue" || t.Redis != "zset" {
			r.errf(s.Key.Pos, "set %q: its key type has class %q and redis type %q; a set needs class queue and redis type zset", s.Key.V, t.Class, t.Redis)
		}
		if s.Member.V != "id" {
			r.errf(s.Member.Pos, "set %q: member %q is not supported (sets hold ids: member: id)", s.Key.V, s.Member.V)
		}
		if !scoreKinds[s.Score.V] {
			r.errf(s.Score.Pos, "set %q: score %q is not one of zero, lease_deadline_ms, run_at_ms", s.Key.V, s.Score.V)
		}
		r.p.Sets = append(r.p.Sets, Set{Key: s.Key.V, Member: s.Member.V, Score: s.Score.V, Summary: s.Summary.V})
	}
	// The invariant: every state names exactly one set, every set one state.
	for i, st := range r.p.Row.States {
		n := 0
		for j := range r.p.Sets {
			if r.p.Sets[j].Key == st.Set {
				if r.p.Sets[j].State != "" {
					r.errf(r.m.Row.States[i].Set.Pos, "state %q names set %q, which state %q already names; each set holds one state", st.Name, st.Set, r.p.Sets[j].State)
				}
				r.p.Sets[j].State = st.Name
				n++
			}
		}
		if n == 0 {
			r.errf(r.m.Row.States[i].Set.Pos, "state %q names set %q, which is not declared (sets: %s)", st.Name, st.Set, keys.names())
		}
	}
	for i, s := range r.p.Sets {
		if s.State == "" {
			r.errf(r.m.Sets.List[i].Key.Pos, "set %q holds no state; every set must be named by exactly one state", s.Key)
		}
	}
}

func (r *resolver) reserve() {
	names := r.unique("reserve member")
	for _, in := range r.m.Reserve {
		names.add(in.Member)
		parts := parseShape(in.Member.V)
		for _, h := range holes(parts) {
			if h != "queue" {
				r.errf(in.Member.Pos, "reserve member %q: the only hole a member may have is <queue>", in.Member.V)
			}
		}
		if len(parts) == 0 || parts[0].Lit == "" || !identRE.MatchString(strings.TrimRight(parts[0].Lit, ":")) {
			r.errf(in.Member.Pos, "reserve member %q must begin with a lower-case name", in.Member.V)
		}
		if !redisTypes[in.Redis.V] {
			r.errf(in.Redis.Pos, "reserve member %q: redis type %q is not one of string, hash, zset, set, list, stream", in.Member.V, in.Redis.V)
		}
		m := Member{Name: in.Member.V, Parts: parts, Redis: in.Redis.V, Summary: in.Summary.V, Semantics: in.Semantics.V}
		if in.Value != nil {
			m.Value = in.Value.V
		}
		fields := r.unique(fmt.Sprintf("reserve member %q field", in.Member.V))
		for _, f := range in.Fields {
			fields.add(f.Name)
			parts := parseShape(f.Name.V)
			for _, h := range holes(parts) {
				if h != "queue" && h != "node" {
					r.errf(f.Name.Pos, "reserve member %q field %q: a field may have only the holes <queue> and <node>", in.Member.V, f.Name.V)
				}
			}
			if len(parts) == 0 || parts[0].Lit == "" || !identRE.MatchString(strings.TrimRight(parts[0].Lit, ":")) {
				r.errf(f.Name.Pos, "reserve member %q field %q must begin with a lower-case name", in.Member.V, f.Name.V)
			}
			m.Fields = append(m.Fields, MemberField{Name: f.Name.V, Parts: parts, Summary: f.Summary.V})
		}
		if len(in.Fields) > 0 && in.Redis.V != "hash" {
			r.errf(in.Redis.Pos, "reserve member %q declares fields, so its redis type must be hash", in.Member.V)
		}
		if in.Probe == nil {
			r.errf(in.Member.Pos, "reserve member %q has no probe; every reserve member needs one", in.Member.V)
		}
		r.p.Reserve = append(r.p.Reserve, m)
	}
	v, ok := r.p.Member("version")
	if !ok {
		r.errf(r.m.Pos, "reserve: the version member is missing; the fence needs it")
		return
	}
	pos := r.m.Pos
	for _, in := range r.m.Reserve {
		if in.Member.V == v.Name {
			pos = in.Member.Pos
			if in.Value != nil {
				pos = in.Value.Pos
			}
			break
		}
	}
	for _, h := range []string{"<major>", "<minor>", "<patch>"} {
		if !strings.Contains(v.Value, h) {
			r.errf(pos, "reserve member version: value %q must contain %s", v.Value, h)
		}
	}
	if !strings.HasPrefix(v.Value, r.p.Name+":") {
		r.errf(pos, "reserve member version: value %q must begin with the protocol name %q", v.Value, r.p.Name+":")
	}
}

func (r *resolver) classes() {
	words, names := r.unique("wire class"), r.unique("wire class name")
	for _, c := range r.m.Classes {
		words.add(c.Word)
		names.add(c.Name)
		if !wordRE.MatchString(c.Word.V) {
			r.errf(c.Word.Pos, "wire class %q must be an upper-case word ([A-Z][A-Z0-9]*)", c.Word.V)
		}
		if c.Word.V == "ERR" || c.Word.V == "WRONGTYPE" || c.Word.V == "NOSCRIPT" {
			r.errf(c.Word.Pos, "wire class %q is the server's own; choose a word of the protocol's", c.Word.V)
		}
		r.ident(c.Name, "wire class name")
		if c.Probe == nil {
			r.errf(c.Word.Pos, "wire class %q has no probe; every wire class needs one", c.Word.V)
		}
		r.p.Classes = append(r.p.Classes, Class{Word: c.Word.V, Name: c.Name.V, Summary: c.Summary.V})
	}
}

// maxWord bounds a vocabulary word, in bytes.
const maxWord = 32

func (r *resolver) vocabularies() {
	names := r.unique("vocabulary")
	for _, in := range r.m.Vocabularies {
		names.add(in.Name)
		r.ident(in.Name, "vocabulary name")
		v := Vocabulary{Name: in.Name.V, Summary: in.Summary.V}
		setDep(r, in.Deprecated, func(d *Deprecation) { v.Deprecated = d })
		if len(in.Words) == 0 {
			r.errf(in.Pos, "vocabulary %q has no words; a vocabulary lists at least one", in.Name.V)
		}
		words := r.unique(fmt.Sprintf("vocabulary %q word", in.Name.V))
		spelled := map[string]string{} // a word without its underscores: the SDKs' names of two such words collide
		for _, w := range in.Words {
			if words.add(w.Word) {
				key := strings.ReplaceAll(w.Word.V, "_", "")
				if other, clash := spelled[key]; clash {
					r.errf(w.Word.Pos, "vocabulary %q words %q and %q differ only in underscores, which the SDKs' names of them drop (a_1 and a1 are both A1 in Go); choose words that differ in a letter or digit", in.Name.V, other, w.Word.V)
				}
				spelled[key] = w.Word.V
			}
			if !identRE.MatchString(w.Word.V) {
				r.errf(w.Word.Pos, "vocabulary %q word %q must be a lower-case identifier ([a-z][a-z0-9_]*)", in.Name.V, w.Word.V)
			} else if len(w.Word.V) > maxWord {
				r.errf(w.Word.Pos, "vocabulary %q word %q is %d bytes; a word is at most %d", in.Name.V, w.Word.V, len(w.Word.V), maxWord)
			}
			word := Word{Word: w.Word.V, Summary: w.Summary.V}
			setDep(r, w.Deprecated, func(d *Deprecation) { word.Deprecated = d })
			v.Words = append(v.Words, word)
		}
		r.p.Vocabularies = append(r.p.Vocabularies, v)
	}
}

// snippets reads the Lua that script bodies share. A snippet is rendered
// where a body includes it, so its names resolve against that script.
func (r *resolver) snippets() {
	names := r.unique("snippet")
	for _, in := range r.m.Snippets {
		names.add(in.Name)
		r.ident(in.Name, "snippet name")
		if strings.TrimSpace(in.Lua.V) == "" {
			r.errf(in.Lua.Pos, "snippet %q: lua is empty", in.Name.V)
		}
		r.p.Snippets = append(r.p.Snippets, Snippet{Name: in.Name.V, Summary: in.Summary.V, Lua: in.Lua.V})
	}
}

// vocabularyNames lists the declared vocabularies, for errors.
func (r *resolver) vocabularyNames() []string {
	var n []string
	for _, v := range r.p.Vocabularies {
		n = append(n, v.Name)
	}
	return n
}

// vocabularyRef checks a script argument's or reply element's vocabulary:
// declared, on a type in types. It returns the vocabulary's name, or "".
func (r *resolver) vocabularyRef(what string, ref *manifest.Str, typ string, types ...string) string {
	if ref == nil {
		return ""
	}
	if !contains(types, typ) {
		r.errf(ref.Pos, "%s: a vocabulary types a value of type %s, not %s", what, strings.Join(types, " or "), typ)
		return ""
	}
	if _, ok := r.p.Vocabulary(ref.V); !ok {
		r.errf(ref.Pos, "%s: vocabulary %q is not declared%s", what, ref.V, knownHint(ref.V, r.vocabularyNames()))
		return ""
	}
	return ref.V
}

// knownHint is " (did you mean "x"? declared: a, b)" for an unknown name.
func knownHint(name string, known []string) string {
	if len(known) == 0 {
		return " (none is declared)"
	}
	if near := manifest.Nearest(name, known); near != "" {
		return fmt.Sprintf(" (did you mean %q? declared: %s)", near, strings.Join(known, ", "))
	}
	return fmt.Sprintf(" (declared: %s)", strings.Join(known, ", "))
}

var argTypes = map[string]bool{"id": true, "token": true, "bytes": true, "int": true, "string": true, "prefix": true}

var replyTypes = map[string]bool{"int": true, "string": true, "array": true}

func (r *resolver) scripts() {
	included := map[string]bool{} // snippet names some body includes
	names := r.unique("script")
	for _, in := range r.m.Scripts {
		names.add(in.Name)
		r.ident(in.Name, "script name")
		s := Script{Name: in.Name.V, Summary: in.Summary.V, Template: in.Body.V}
		keys := r.unique(fmt.Sprintf("script %q key", in.Name.V))
		scopes := map[string]bool{}
		for _, k := range in.Keys {
			keys.add(k.Name)
			r.ident(k.Name, "key name")
			sk := ScriptKey{Name: k.Name.V, Type: k.Type.V, Repeated: k.Repeated.V}
			if k.Type.V == "reserve" {
				scopes["reserve"] = true
				if k.Member == nil {
					r.errf(k.Pos, "script %q key %q: a reserve key names its member (member: ...)", in.Name.V, k.Name.V)
				} else if m, ok := r.p.Member(k.Member.V); !ok {
					r.errf(k.Member.Pos, "script %q key %q: %q is not a reserve member", in.Name.V, k.Name.V, k.Member.V)
				} else if m.HasQueue() {
					r.errf(k.Member.Pos, "script %q key %q: reserve member %q names a queue and cannot be a script key", in.Name.V, k.Name.V, k.Member.V)
				} else {
					sk.Member = m.Name
				}
			} else if _, ok := r.p.KeyType(k.Type.V); !ok {
				r.errf(k.Type.Pos, "script %q key %q: type %q is not a declared key type (nor reserve)", in.Name.V, k.Name.V, k.Type.V)
			} else {
				scopes["queue"] = true
				if k.Member != nil {
					r.errf(k.Member.Pos, "script %q key %q: only reserve keys name a member", in.Name.V, k.Name.V)
				}
			}
			s.Keys = append(s.Keys, sk)
		}
		for i, k := range in.Keys {
			if k.Repeated.V && i != len(in.Keys)-1 {
				r.errf(k.Repeated.Pos, "script %q key %q: a repeated key group is the script's last key (found %d after it)", in.Name.V, k.Name.V, len(in.Keys)-1-i)
			}
		}
		switch {
		case len(scopes) > 1:
			r.errf(in.Name.Pos, "script %q mixes per-queue and reserve keys; a script's keys must share one cluster slot", in.Name.V)
		case scopes["reserve"]:
			s.Scope = "reserve"
		default:
			s.Scope = "queue"
		}
		args := r.unique(fmt.Sprintf("script %q argument", in.Name.V))
		for _, a := range in.Argv {
			args.add(a.Name)
			r.ident(a.Name, "argument name")
			if !argTypes[a.Type.V] {
				r.errf(a.Type.Pos, "script %q argument %q: type %q is not one of id, token, bytes, int, string, prefix", in.Name.V, a.Name.V, a.Type.V)
			}
			if a.Repeated.V && a.Type.V == "prefix" {
				r.errf(a.Repeated.Pos, "script %q argument %q: a prefix is one value and cannot be repeated", in.Name.V, a.Name.V)
			}
			voc := r.vocabularyRef(fmt.Sprintf("script %q argument %q", in.Name.V, a.Name.V), a.Vocabulary, a.Type.V, "string")
			arg := Arg{Name: a.Name.V, Type: a.Type.V, Summary: a.Summary.V, Repeated: a.Repeated.V, Vocabulary: voc}
			for _, b := range []struct {
				v   manifest.Int
				dst **int64
				key string
			}{{a.Min, &arg.Min, "min"}, {a.Max, &arg.Max, "max"}} {
				if !b.v.Set {
					continue
				}
				if a.Type.V != "int" {
					r.errf(b.v.Pos, "script %q argument %q: %s bounds an int argument; this one is of type %q", in.Name.V, a.Name.V, b.key, a.Type.V)
					continue
				}
				v := b.v.V
				*b.dst = &v
			}
			if arg.Min != nil && arg.Max != nil && *arg.Min > *arg.Max {
				r.errf(a.Max.Pos, "script %q argument %q: max %d is below min %d", in.Name.V, a.Name.V, *arg.Max, *arg.Min)
			}
			s.Argv = append(s.Argv, arg)
		}
		misplaced := false // a repeated argument before a single one, reported once
		for i, a := range in.Argv {
			if !a.Repeated.V || misplaced {
				continue
			}
			for _, b := range in.Argv[i+1:] {
				if !b.Repeated.V {
					r.errf(a.Repeated.Pos, "script %q argument %q: a repeated argument group is the script's last arguments (%q after it is not repeated)", in.Name.V, a.Name.V, b.Name.V)
					misplaced = true
					break
				}
			}
		}
		r.repeatedKeys(in, s)
		for _, k := range s.Keys {
			if k.Repeated {
				continue
			}
			if t, _ := r.p.KeyType(k.Type); t.Class == "job" {
				if a, i := s.Arg("id"); i == 0 || a.Type != "id" {
					r.errf(in.Name.Pos, "script %q has a job key (%q) but no argument \"id\" of type id to build it from", in.Name.V, k.Name)
				}
			}
		}
		for _, a := range s.Argv {
			if a.Type == "prefix" && s.Scope == "reserve" {
				r.errf(in.Name.Pos, "script %q: a prefix argument needs per-queue keys", in.Name.V)
			}
		}
		s.Reply = r.reply(in)
		refusals := r.unique(fmt.Sprintf("script %q refusal", in.Name.V))
		for _, f := range in.Refusals {
			refusals.add(f.ID)
			if _, ok := r.p.Class(f.Class.V); !ok {
				r.errf(f.Class.Pos, "script %q refuses with class %q, which is not declared (declared: %s)", in.Name.V, f.Class.V, r.classWords())
			}
			if strings.ContainsAny(f.Message.V, "\r\n") {
				r.errf(f.Message.Pos, "script %q refusal %q: an error reply is one line", in.Name.V, f.ID.V)
			}
			s.Refusals = append(s.Refusals, Refusal{ID: f.ID.V, Class: f.Class.V, Message: f.Message.V, When: f.When.V})
		}
		for _, t := range in.Transitions {
			for _, end := range []manifest.Str{t.From, t.To} {
				if _, ok := r.p.State(end.V); !ok && end.V != None {
					r.errf(end.Pos, "script %q transition uses state %q, which is not declared (states: %s, or %s)", in.Name.V, end.V, r.stateNames(), None)
				}
			}
			if t.From.V == None && t.To.V == None {
				r.errf(t.Pos, "script %q: a transition from none to none moves nothing", in.Name.V)
			}
			s.Transitions = append(s.Transitions, Transition{From: t.From.V, To: t.To.V})
		}
		if len(s.Transitions) > 0 && s.Scope == "reserve" {
			r.errf(in.Name.Pos, "script %q: only per-queue scripts move rows between states", in.Name.V)
		}
		var used []string
		s.Body, used = renderBody(r.p, &s, in.Body, r.errs)
		for _, name := range used {
			included[name] = true
		}
		r.p.Scripts = append(r.p.Scripts, s)
	}
	for i, sn := range r.p.Snippets {
		if !included[sn.Name] && len(r.p.brokenSnippets) == 0 { // a broken one stops every body that includes any
			r.errf(r.m.Snippets[i].Name.Pos, "snippet %q is included by no script body ({{template %q}}); include it or delete it", sn.Name, sn.Name)
		}
	}
	for i := range r.p.Classes {
		for _, s := range r.p.Scripts {
			for _, f := range s.Refusals {
				if f.Class == r.p.Classes[i].Word && !contains(r.p.Classes[i].IssuedBy, s.Name) {
					r.p.Classes[i].IssuedBy = append(r.p.Classes[i].IssuedBy, s.Name)
				}
			}
		}
		if len(r.p.Classes[i].IssuedBy) == 0 {
			r.errf(r.m.Classes[i].Word.Pos, "wire class %q is issued by no script", r.p.Classes[i].Word)
		}
	}
	for _, need := range []string{"fence"} {
		if _, ok := r.p.Script(need); !ok {
			r.errf(r.m.Pos, "scripts: the %q script is missing; the client needs it", need)
		}
	}
}

// repeatedKeys checks a script's repeated KEYS group: at most one, of the
// job class (one row per id), its cardinality tied to a repeated ARGV
// group of type id, the script's last argument.
func anyRepeated(argv []manifest.Arg) bool {
	for _, a := range argv {
		if a.Repeated.V {
			return true
		}
	}
	return false
}

func (r *resolver) repeatedKeys(in manifest.Script, s Script) {
	var groups []manifest.ScriptKey
	for _, k := range in.Keys {
		if k.Repeated.V {
			groups = append(groups, k)
		}
	}
	if len(groups) == 0 {
		return
	}
	if len(groups) > 1 {
		r.errf(groups[1].Repeated.Pos, "script %q key %q: a script has at most one repeated key group (%q is one already)", in.Name.V, groups[1].Name.V, groups[0].Name.V)
	}
	k := groups[0]
	if t, ok := r.p.KeyType(k.Type.V); ok && t.Class != "job" {
		r.errf(k.Type.Pos, "script %q key %q: a repeated key group holds the rows of ids (a key type of class job); %q is of class %q, one key per queue", in.Name.V, k.Name.V, k.Type.V, t.Class)
	} else if k.Type.V == "reserve" {
		r.errf(k.Type.Pos, "script %q key %q: a repeated key group holds the rows of ids, not reserve members", in.Name.V, k.Name.V)
	}
	if a, i := s.RepeatedArg(); i == 0 && anyRepeated(in.Argv) {
		// The group is misplaced, which is reported already.
	} else if i == 0 || a.Type != "id" {
		r.errf(k.Repeated.Pos, "script %q key %q: a repeated key group needs a repeated argument group, the script's last arguments, whose first member is of type id and gives its cardinality (one key per id)", in.Name.V, k.Name.V)
	}
}

func (r *resolver) reply(in manifest.Script) Reply {
	rp := Reply{Type: in.Reply.Type.V, Summary: in.Reply.Summary.V}
	if !replyTypes[rp.Type] {
		r.errf(in.Reply.Type.Pos, "script %q: reply type %q is not one of int, string, array", in.Name.V, rp.Type)
	}
	if in.Reply.Nil != nil {
		rp.Nil = in.Reply.Nil.V
		if rp.Nil == "" {
			r.errf(in.Reply.Nil.Pos, "script %q: say what a nil reply means", in.Name.V)
		}
	}
	vals := r.unique(fmt.Sprintf("script %q reply value", in.Name.V))
	seen := map[int64]bool{}
	for _, v := range in.Reply.Values {
		vals.add(v.Name)
		r.ident(v.Name, "reply value name")
		if seen[v.Value.V] {
			r.errf(v.Value.Pos, "script %q: reply value %d is named twice", in.Name.V, v.Value.V)
		}
		seen[v.Value.V] = true
		rp.Values = append(rp.Values, ReplyValue{Value: v.Value.V, Name: v.Name.V, Summary: v.Summary.V})
	}
	if len(rp.Values) > 0 && rp.Type != "int" {
		r.errf(in.Reply.Pos, "script %q: named reply values need reply type int", in.Name.V)
	}
	els := r.unique(fmt.Sprintf("script %q reply element", in.Name.V))
	for _, e := range in.Reply.Elements {
		els.add(e.Name)
		r.ident(e.Name, "reply element name")
		if !argTypes[e.Type.V] || e.Type.V == "prefix" {
			r.errf(e.Type.Pos, "script %q reply element %q: type %q is not one of id, token, bytes, int, string", in.Name.V, e.Name.V, e.Type.V)
		}
		voc := r.vocabularyRef(fmt.Sprintf("script %q reply element %q", in.Name.V, e.Name.V), e.Vocabulary, e.Type.V, "string", "bytes")
		rp.Elements = append(rp.Elements, Arg{Name: e.Name.V, Type: e.Type.V, Summary: e.Summary.V, Vocabulary: voc})
	}
	rp.Repeated = in.Reply.Repeated.V
	if rp.Repeated && (rp.Type != "array" || rp.Nil != "") {
		r.errf(in.Reply.Repeated.Pos, "script %q: a repeated reply is an array of records, never nil (an empty array says there is none)", in.Name.V)
	}
	if (rp.Type == "array") != (len(rp.Elements) > 0) {
		r.errf(in.Reply.Pos, "script %q: an array reply lists its elements, and only an array reply does", in.Name.V)
	}
	if len(rp.Values) == 0 && rp.Summary == "" && rp.Type != "array" {
		r.errf(in.Reply.Pos, "script %q: say what the reply means (summary or values)", in.Name.V)
	}
	return rp
}

func (r *resolver) classWords() string {
	var w []string
	for _, c := range r.p.Classes {
		w = append(w, c.Word)
	}
	return strings.Join(w, ", ")
}

func (r *resolver) stateNames() string {
	var w []string
	for _, s := range r.p.Row.States {
		w = append(w, s.Name)
	}
	return strings.Join(w, ", ")
}

func (r *resolver) governance() {
	g := r.m.Governance
	r.p.Governance.Summary = g.Summary.V
	bumps := r.unique("rule bump")
	for _, rule := range g.Rules {
		bumps.add(rule.Bump)
		if rule.Bump.V != "patch" && rule.Bump.V != "minor" && rule.Bump.V != "major" {
			r.errf(rule.Bump.Pos, "rule bump %q is not one of patch, minor, major", rule.Bump.V)
		}
		r.p.Governance.Rules = append(r.p.Governance.Rules, Rule{Bump: rule.Bump.V, Summary: rule.Summary.V})
	}
	// Comparisons with the manifest's version only make sense when it
	// parses; header() has reported it otherwise.
	_, verr := ParseSemver(r.m.Version.V)
	versionOK := verr == nil
	var prev *Semver
	var last manifest.Release
	current := 0
	for _, h := range g.History {
		v, err := ParseSemver(h.Version.V)
		if err != nil {
			r.errf(h.Version.Pos, "history: %v", err)
			continue
		}
		if prev != nil && v.Compare(*prev) <= 0 {
			r.errf(h.Version.Pos, "history: %s does not come after %s; versions are recorded monotonically", v, *prev)
		}
		prev, last = &v, h
		switch h.Status.V {
		case "frozen", "released":
		case "current":
			current++
			switch {
			case versionOK && v != r.p.Version:
				r.errf(h.Version.Pos, "history: %s is marked current, but the manifest's version is %s; only that version's entry is current", v, r.p.Version)
			case !versionOK && current > 1:
				r.errf(h.Status.Pos, "history: %s is a second current entry; exactly one entry is current", v)
			}
		default:
			r.errf(h.Status.Pos, "history: status %q is not one of frozen, released, current", h.Status.V)
		}
		r.p.Governance.History = append(r.p.Governance.History, Release{Version: v, Status: h.Status.V, Summary: h.Summary.V})
	}
	if current == 0 {
		r.errf(g.Pos, "history: no entry is current; the manifest's version needs an entry with status current")
	}
	if versionOK && prev != nil && *prev != r.p.Version && last.Status.V != "current" {
		r.errf(last.Version.Pos, "history: the last entry is %s; it must be the manifest's version %s", *prev, r.p.Version)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// anchored compiles a manifest pattern to match whole strings. The pattern
// must compile on its own first, so that an unbalanced parenthesis cannot
// slip out of the anchoring group ("a)|(b").
func anchored(pattern string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + pattern + `)$`)
}

// regexpMaxLen returns the longest string a pattern matches, or -1 when it
// is unbounded.
func regexpMaxLen(pattern string) (int, error) {
	re, err := parseSyntax(pattern)
	if err != nil {
		return 0, err
	}
	n := maxLen(re)
	if n == math.MaxInt {
		return -1, nil
	}
	return n, nil
}
