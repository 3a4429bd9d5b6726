// Package model is the resolved EchoMQ protocol: every cross-reference of
// the manifest checked and followed, script bodies rendered, in manifest
// order. Every emitter is a pure function of a *Protocol; nothing
// downstream reads YAML.
package model

import (
	"strings"
	"time"

	"github.com/echomq/echomq/gen/manifest"
)

// Protocol is one version of the wire protocol.
type Protocol struct {
	Name       string // the protocol's name, the prefix of the version record
	Version    Semver
	Summary    string
	Server     string
	IDs        IDCanon
	Kinds      []Kind
	Queues     QueueGrammar
	KeyClasses []KeyClass
	KeyTypes   []KeyType
	Row        Row
	Invariant  string
	Sets       []Set
	Reserve    []Member
	Classes    []Class
	// Vocabularies are the closed sets of words the wire carries as
	// values, in manifest order; none before 2.3.0.
	Vocabularies []Vocabulary
	// Snippets are the Lua script bodies share, in manifest order; none
	// before 2.4.0.
	Snippets   []Snippet
	Scripts    []Script
	Governance Governance

	// File is the manifest's file name, for positions.
	File string
	// Source is the decoded manifest, kept for its positions.
	Source *manifest.Manifest
	// Retired are the tombstones of names that are gone and may never
	// return with another meaning.
	Retired []Tombstone

	// brokenSnippets are the snippets whose template does not parse,
	// reported once however many bodies include them.
	brokenSnippets map[string]bool
}

// Deprecation announces that an element will be removed at a later
// major.
type Deprecation struct {
	Since  Semver // the version that announced it
	Reason string
}

// Tombstone is a retired name.
type Tombstone struct {
	What    string // one of TombstoneKinds
	Name    string // as the wire knows it; a reply value as <script>:<integer>
	Since   Semver // the version that retired it
	Meaning string
}

// TombstoneKinds are what a tombstone may name.
var TombstoneKinds = []string{"kind", "key_type", "field", "state", "set", "member", "lock", "class", "script", "reply_value"}

// The writer duties of key types and row fields: DutyEveryWriter when
// every writer of the major maintains it (adding one is a major), DutyHint
// when writers may skip it and readers never rely on it (adding one is a
// minor, like the wake doorbell).
//
// DutyEveryClaimer and DutyEveryCompleter are the duties of a policy: what
// every claim and settle (DutyEveryClaimer), or every settle
// (DutyEveryCompleter), must honour. A frozen script cannot honour what
// was added after it, so such a key type is declared behind a tripwire
// (KeyType.Behind) that refuses the scripts of older releases.
const (
	DutyEveryWriter    = "every-writer"
	DutyEveryClaimer   = "every-claimer"
	DutyEveryCompleter = "every-completer"
	DutyHint           = "hint"
)

// Semver is a major.minor.patch version.
type Semver struct {
	Major, Minor, Patch int
}

// IDCanon is the grammar and numeric layout of branded ids.
type IDCanon struct {
	Length      int
	KindLength  int
	KindPattern string
	BodyLength  int
	Encoding    string
	Alphabet    string
	BodySummary string
	Epoch       time.Time
	Layout      []Bitfield // most significant first
	Uniqueness  string
	Examples    []IDExample
	Invalid     []string
}

// Bitfield is one field of the snowflake layout.
type Bitfield struct {
	Name    string
	Bits    int
	Shift   int // bit position of the field's least significant bit
	Summary string
}

// IDExample is an id and the facts it decodes to.
type IDExample struct {
	ID       string
	Time     time.Time
	Node     int64
	Sequence int64
}

// Kind is a registered id kind.
type Kind struct {
	Name       string
	Work       bool
	Summary    string
	Deprecated *Deprecation // set when the element is deprecated
}

// QueueGrammar is the grammar of queue names.
type QueueGrammar struct {
	Pattern   string // unanchored, as written in the manifest
	MaxLength int    // the longest name the pattern admits
	Summary   string
	Examples  []string
	Invalid   []string
}

// KeyClass is one class of the closed key grammar.
type KeyClass struct {
	Name    string
	Shape   string
	Parts   []Part
	Summary string
}

// Part is a literal run of a key shape, or a hole (queue, type, id,
// member) to be filled.
type Part struct {
	Lit  string
	Hole string
}

// KeyType is a per-queue or per-job key type.
type KeyType struct {
	Name       string
	Class      string // queue or job
	Redis      string
	Summary    string
	Deprecated *Deprecation // set when the element is deprecated
	Duty       string       // DutyEveryWriter, DutyEveryClaimer, DutyEveryCompleter or DutyHint (the default for a key type)
	// Tripwire is the key type's other layout, or nil.
	Tripwire *Tripwire
	// Behind is the key type whose tripwire guards this one, or "".
	Behind string
}

// Tripwire is a key type's other layout: in it, the key holds a value of
// redis type Redis and the key type's members live at MovesTo's key, so
// that every script of a release from Floor on that declares the key
// fails WRONGTYPE on it before any write.
type Tripwire struct {
	Redis   string
	MovesTo string
	Floor   Semver
	Summary string
}

// Row is the job row.
type Row struct {
	Key     string
	Summary string
	Fields  []Field
	States  []State
}

// The roles of the row's fields (Field.Role): a resolved row has exactly
// one field of each, whatever the manifest names the fields.
const (
	RoleState   = "state"   // the lifecycle state; names the set holding the id
	RoleToken   = "token"   // the fencing token, the count of claims
	RolePayload = "payload" // the opaque bytes
)

// ScoreZero is the score kind (Set.Score) of a set whose members all score
// zero, so that their lexicographic order is mint order.
const ScoreZero = "zero"

// Field is one field of the job row.
type Field struct {
	Name       string
	Role       string // state, token or payload
	Encoding   string
	Initial    string
	Summary    string
	Deprecated *Deprecation // set when the element is deprecated
	Duty       string       // DutyEveryWriter (the default for a row field) or DutyHint
}

// State is one value of the row's state field.
type State struct {
	Name       string
	Set        string // the key type of the set that holds ids in this state
	Summary    string
	Deprecated *Deprecation // set when the element is deprecated
}

// Set is one of the per-queue sorted sets.
type Set struct {
	Key        string
	Member     string
	Score      string // zero, lease_deadline_ms or run_at_ms
	State      string // the state whose ids it holds
	Summary    string
	Deprecated *Deprecation // set when the element is deprecated
}

// Member is one member of the reserve.
type Member struct {
	Name       string // as written: version, migration:<queue>
	Parts      []Part // the member's own parts, with a queue hole if any
	Redis      string
	Value      string
	Summary    string
	Semantics  string
	Fields     []MemberField // named fields of a hash member, such as lock names
	Probe      Probe
	Deprecated *Deprecation // set when the element is deprecated
}

// MemberField is a named field of a hash reserve member.
type MemberField struct {
	Name       string // as written, e.g. node:<node>
	Parts      []Part // with holes queue or node
	Summary    string
	Deprecated *Deprecation // set when the element is deprecated
}

// Class is one wire class.
type Class struct {
	Word       string
	Name       string
	Summary    string
	IssuedBy   []string // script names, in manifest order
	Probe      Probe
	Deprecated *Deprecation // set when the element is deprecated
}

// Vocabulary is a closed set of words the wire carries as values.
type Vocabulary struct {
	Name       string // snake_case; the SDKs' type is named after it
	Summary    string
	Words      []Word // in manifest order, at least one
	Deprecated *Deprecation
}

// Snippet is Lua shared by script bodies, included with
// {{template "<name>"}} and rendered in the including script's context.
type Snippet struct {
	Name    string // a lower-case identifier
	Summary string
	Lua     string // the template, as written
}

// Word is one word of a vocabulary.
type Word struct {
	Word       string
	Summary    string
	Deprecated *Deprecation
}

// Plural is the vocabulary's name in the plural, snake_case, as the SDKs
// name the list of its words: failure_class -> failure_classes,
// category -> categories, event_type -> event_types.
func (v Vocabulary) Plural() string {
	n := v.Name
	switch {
	case strings.HasSuffix(n, "s"), strings.HasSuffix(n, "x"), strings.HasSuffix(n, "ch"), strings.HasSuffix(n, "sh"):
		return n + "es"
	case len(n) > 1 && strings.HasSuffix(n, "y") && !strings.ContainsAny(n[len(n)-2:len(n)-1], "aeiou_"):
		return n[:len(n)-1] + "ies"
	}
	return n + "s"
}

// Has reports whether w is one of the vocabulary's words.
func (v Vocabulary) Has(w string) bool {
	_, ok := v.Word(w)
	return ok
}

// Word returns the vocabulary's word w.
func (v Vocabulary) Word(w string) (Word, bool) {
	for _, x := range v.Words {
		if x.Word == w {
			return x, true
		}
	}
	return Word{}, false
}

// Probe is a runnable check against a live server.
type Probe struct {
	Summary string
	Steps   []Step
}

// Step is one check of a probe.
type Step struct {
	Check   string
	Script  string   // a script to run, or empty
	With    []KV     // the script's ARGV by name, placeholders unexpanded
	Command []string // a command to send, placeholders unexpanded
	Save    string
	Expect  Expect
}

// KV is a name and a value.
type KV struct {
	Key, Value string
}

// Expect is what a step must answer.
type Expect struct {
	Element  string // array element to narrow to, by name (in the first record of a repeated reply)
	Kind     string // int, string, error, nil, positive or fence
	Int      int64
	String   string // string value, error class word or fence verdict
	Positive bool
}

// Script is one Lua script of the bundle.
type Script struct {
	Name        string
	Summary     string
	Scope       string // queue or reserve
	Keys        []ScriptKey
	Argv        []Arg
	Reply       Reply
	Refusals    []Refusal
	Transitions []Transition
	Template    string       // the body as written in the manifest
	Body        string       // the body rendered to Lua
	Deprecated  *Deprecation // set when the element is deprecated
}

// ScriptKey is one KEYS slot.
type ScriptKey struct {
	Name   string
	Type   string // a key type name, or "reserve"
	Member string // the reserve member when Type is reserve
	// Repeated marks a group of zero or more KEYS: the script's last
	// slot, one key per element of its repeated ARGV group (ids), each
	// the row of that id.
	Repeated bool
}

// Arg is one ARGV slot or reply element.
type Arg struct {
	Name    string
	Type    string // id, token, bytes, int, string, prefix
	Summary string
	// Repeated marks a member of the script's repeated ARGV group: its
	// last slots, zero or more records of every repeated argument in
	// order, interleaved (ARGV[j], ARGV[j+1], ... for the first record,
	// then the next); never a reply element.
	Repeated bool
	// Vocabulary names the vocabulary whose words the argument or
	// element carries, or is empty.
	Vocabulary string
	// Min and Max bound an int argument's values, both inclusive, when
	// the manifest gives them (nil: unbounded on that side).
	Min, Max *int64
}

// Reply is the shape of a script's reply.
type Reply struct {
	Type    string // int, string or array
	Summary string
	Nil     string // when non-empty, a nil reply is allowed and means this
	// Repeated marks an array of zero or more records, each an array of
	// Elements, instead of one record.
	Repeated bool
	Values   []ReplyValue
	Elements []Arg
}

// ReplyValue names one integer reply.
type ReplyValue struct {
	Value      int64
	Name       string
	Summary    string
	Deprecated *Deprecation // set when the element is deprecated
}

// Refusal is one typed error reply.
type Refusal struct {
	ID      string
	Class   string // the class word
	Message string
	When    string
}

// Text is the whole error reply: the class word, a space, the message.
func (r Refusal) Text() string { return r.Class + " " + r.Message }

// Transition is one state change; None is the absence of a row.
type Transition struct {
	From, To string
}

// None names the absence of a row in transitions.
const None = "none"

// Governance holds the change rules and the version history.
type Governance struct {
	Summary string
	Rules   []Rule
	History []Release
}

// Rule is a bump and what it admits.
type Rule struct {
	Bump    string
	Summary string
}

// Release is one entry of the version history.
type Release struct {
	Version Semver
	Status  string
	Summary string
}

// WorkKind returns the kind admitted in the job position.
func (p *Protocol) WorkKind() Kind {
	for _, k := range p.Kinds {
		if k.Work {
			return k
		}
	}
	return Kind{}
}

// Vocabulary returns the vocabulary named name.
func (p *Protocol) Vocabulary(name string) (Vocabulary, bool) {
	for _, v := range p.Vocabularies {
		if v.Name == name {
			return v, true
		}
	}
	return Vocabulary{}, false
}

// KeyClass returns the key class named name.
func (p *Protocol) KeyClass(name string) (KeyClass, bool) {
	for _, c := range p.KeyClasses {
		if c.Name == name {
			return c, true
		}
	}
	return KeyClass{}, false
}

// KeyType returns the key type named name.
func (p *Protocol) KeyType(name string) (KeyType, bool) {
	for _, t := range p.KeyTypes {
		if t.Name == name {
			return t, true
		}
	}
	return KeyType{}, false
}

// Field returns the row field with role.
func (p *Protocol) Field(role string) (Field, bool) {
	for _, f := range p.Row.Fields {
		if f.Role == role {
			return f, true
		}
	}
	return Field{}, false
}

// State returns the state named name.
func (p *Protocol) State(name string) (State, bool) {
	for _, s := range p.Row.States {
		if s.Name == name {
			return s, true
		}
	}
	return State{}, false
}

// Member returns the reserve member named name (the part before any hole,
// without its trailing colon: "migration" finds migration:<queue>).
func (p *Protocol) Member(name string) (Member, bool) {
	for _, m := range p.Reserve {
		if m.Name == name || m.Ident() == name {
			return m, true
		}
	}
	return Member{}, false
}

// Ident is the member's name without holes: "migration" for
// migration:<queue>.
func (m Member) Ident() string {
	if len(m.Parts) == 0 {
		return m.Name
	}
	lit := m.Parts[0].Lit
	for len(lit) > 0 && lit[len(lit)-1] == ':' {
		lit = lit[:len(lit)-1]
	}
	return lit
}

// HasQueue reports whether the member's key names a queue.
func (m Member) HasQueue() bool {
	for _, p := range m.Parts {
		if p.Hole == "queue" {
			return true
		}
	}
	return false
}

// Class returns the wire class with the class word word.
func (p *Protocol) Class(word string) (Class, bool) {
	for _, c := range p.Classes {
		if c.Word == word {
			return c, true
		}
	}
	return Class{}, false
}

// Script returns the script named name.
func (p *Protocol) Script(name string) (Script, bool) {
	for _, s := range p.Scripts {
		if s.Name == name {
			return s, true
		}
	}
	return Script{}, false
}

// Arg returns the ARGV slot named name and its 1-based index.
func (s Script) Arg(name string) (Arg, int) {
	for i, a := range s.Argv {
		if a.Name == name {
			return a, i + 1
		}
	}
	return Arg{}, 0
}

// Key returns the KEYS slot named name and its 1-based index.
func (s Script) Key(name string) (ScriptKey, int) {
	for i, k := range s.Keys {
		if k.Name == name {
			return k, i + 1
		}
	}
	return ScriptKey{}, 0
}

// RepeatedKey returns the script's repeated KEYS group and the 1-based
// index of its first key, or index 0 when the script has none.
func (s Script) RepeatedKey() (ScriptKey, int) {
	if n := len(s.Keys); n > 0 && s.Keys[n-1].Repeated {
		return s.Keys[n-1], n
	}
	return ScriptKey{}, 0
}

// RepeatedArg returns the first argument of the script's repeated ARGV
// group and its 1-based index, or index 0 when the script has none.
func (s Script) RepeatedArg() (Arg, int) {
	if g, j := s.RepeatedArgs(); j > 0 {
		return g[0], j
	}
	return Arg{}, 0
}

// RepeatedArgs returns the members of the script's repeated ARGV group
// (its trailing repeated arguments, one record of them per job, the
// records interleaved) and the 1-based index of the group's first value,
// or nil and 0 when the script has none.
func (s Script) RepeatedArgs() ([]Arg, int) {
	n := len(s.Argv)
	j := n
	for j > 0 && s.Argv[j-1].Repeated {
		j--
	}
	if j == n {
		return nil, 0
	}
	return s.Argv[j:], j + 1
}

// Refusal returns the refusal with id.
func (s Script) Refusal(id string) (Refusal, bool) {
	for _, r := range s.Refusals {
		if r.ID == id {
			return r, true
		}
	}
	return Refusal{}, false
}

// VersionRecord is the value of the version reserve member for this
// protocol: the member's value template with the version filled in.
func (p *Protocol) VersionRecord() string {
	m, _ := p.Member("version")
	return FillVersion(m.Value, p.Version)
}

// Bitfield returns the snowflake field named name.
func (c IDCanon) Bitfield(name string) (Bitfield, bool) {
	for _, b := range c.Layout {
		if b.Name == name {
			return b, true
		}
	}
	return Bitfield{}, false
}
