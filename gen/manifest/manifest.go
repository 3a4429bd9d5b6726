// Package manifest reads protocol.yaml into structs that remember where
// every value came from. It checks shape only (known fields, required
// fields, scalar types); cross-references are checked by package model.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Manifest is the whole protocol.yaml.
type Manifest struct {
	Pos      Pos
	Protocol Str      `yaml:"protocol,required"`
	Version  Str      `yaml:"version,required"`
	Summary  Str      `yaml:"summary"`
	Server   Str      `yaml:"server"`
	IDs      IDs      `yaml:"ids,required"`
	Kinds    []Kind   `yaml:"kinds,required"`
	Queues   Queues   `yaml:"queues,required"`
	Keys     Keys     `yaml:"keys,required"`
	Row      Row      `yaml:"row,required"`
	Sets     Sets     `yaml:"sets,required"`
	Reserve  []Member `yaml:"reserve,required"`
	Classes  []Class  `yaml:"classes,required"`
	// Vocabularies are the closed sets of words the wire carries as
	// values; optional (a manifest before 2.3.0 has none).
	Vocabularies []Vocabulary `yaml:"vocabularies"`
	// Snippets are Lua shared by script bodies; optional (a manifest
	// before 2.4.0 has none).
	Snippets   []Snippet  `yaml:"snippets"`
	Scripts    []Script   `yaml:"scripts,required"`
	Governance Governance `yaml:"governance,required"`
	// Retired holds the tombstones of names that are gone from the
	// protocol and may never return with another meaning.
	Retired []Tombstone `yaml:"retired"`
}

// Tombstone is a retired name: what it named, the name, the version that
// retired it and what it meant.
type Tombstone struct {
	Pos Pos
	// What is what the name named: kind, key_type, field, state, set,
	// member, lock, class, script or reply_value.
	What Str `yaml:"what,required"`
	// Name is the retired name as the wire knows it: a class word, a lock
	// name, a reply value as <script>:<integer>.
	Name    Str `yaml:"name,required"`
	Since   Str `yaml:"since,required"`
	Meaning Str `yaml:"meaning"`
}

// Deprecation announces that an element will be removed at a later major:
// the version that announced it and why, or what to use instead.
type Deprecation struct {
	Pos    Pos
	Since  Str `yaml:"since,required"`
	Reason Str `yaml:"reason"`
}

// IDs is the identity canon.
type IDs struct {
	Pos             Pos
	Length          Int         `yaml:"length,required"`
	Kind            IDKind      `yaml:"kind,required"`
	Body            IDBody      `yaml:"body,required"`
	Snowflake       Snowflake   `yaml:"snowflake,required"`
	Uniqueness      Str         `yaml:"uniqueness"`
	Examples        []IDExample `yaml:"examples"`
	InvalidExamples []Str       `yaml:"invalid_examples"`
}

// IDKind is the grammar of an id's kind prefix.
type IDKind struct {
	Pos     Pos
	Length  Int `yaml:"length,required"`
	Pattern Str `yaml:"pattern,required"`
}

// IDBody is the grammar of an id's body.
type IDBody struct {
	Pos      Pos
	Length   Int `yaml:"length,required"`
	Encoding Str `yaml:"encoding,required"`
	Alphabet Str `yaml:"alphabet,required"`
	Summary  Str `yaml:"summary"`
}

// Snowflake is the bit layout of an id's numeric value.
type Snowflake struct {
	Pos    Pos
	Epoch  Str            `yaml:"epoch,required"`
	Layout []SnowflakeBit `yaml:"layout,required"`
}

// SnowflakeBit is one field of the snowflake layout.
type SnowflakeBit struct {
	Pos     Pos
	Name    Str `yaml:"name,required"`
	Bits    Int `yaml:"bits,required"`
	Summary Str `yaml:"summary"`
}

// IDExample is an id with what it must decode to.
type IDExample struct {
	Pos      Pos
	ID       Str `yaml:"id,required"`
	Time     Str `yaml:"time,required"`
	Node     Int `yaml:"node,required"`
	Sequence Int `yaml:"sequence,required"`
}

// Kind is one entry of the kind registry.
type Kind struct {
	Pos        Pos
	Name       Str          `yaml:"name,required"`
	Work       Bool         `yaml:"work"`
	Summary    Str          `yaml:"summary"`
	Deprecated *Deprecation `yaml:"deprecated"`
}

// Queues is the queue-name grammar.
type Queues struct {
	Pos             Pos
	Pattern         Str   `yaml:"pattern,required"`
	Summary         Str   `yaml:"summary"`
	Examples        []Str `yaml:"examples"`
	InvalidExamples []Str `yaml:"invalid_examples"`
}

// Keys is the closed key grammar.
type Keys struct {
	Pos     Pos
	Classes []KeyClass `yaml:"classes,required"`
	Types   []KeyType  `yaml:"types,required"`
}

// KeyClass is one of the grammar's key classes.
type KeyClass struct {
	Pos     Pos
	Name    Str `yaml:"name,required"`
	Shape   Str `yaml:"shape,required"`
	Summary Str `yaml:"summary"`
}

// KeyType is a per-queue or per-job key type.
type KeyType struct {
	Pos        Pos
	Name       Str          `yaml:"name,required"`
	Class      Str          `yaml:"class,required"`
	Redis      Str          `yaml:"redis,required"`
	Summary    Str          `yaml:"summary"`
	Deprecated *Deprecation `yaml:"deprecated"`
	// Duty is every-writer (every writer maintains it), every-claimer
	// (every claim and settle honours it), every-completer (every settle
	// honours it) or hint.
	Duty Str `yaml:"duty"`
	// Tripwire, when set, is the other layout of this key type's keys: a
	// value of another redis type left at the key while its members live
	// at the key type MovesTo, so that every script of an older release
	// that declares the key fails WRONGTYPE on it before any write.
	Tripwire *Tripwire `yaml:"tripwire"`
	// Behind names the key type whose tripwire keeps the scripts of
	// older releases away from the keys this one governs: required of a
	// key type with duty every-claimer or every-completer.
	Behind Str `yaml:"behind"`
}

// Tripwire is a key type's other layout (KeyType.Tripwire).
type Tripwire struct {
	Pos Pos
	// Redis is the redis type of the value left at the key.
	Redis Str `yaml:"redis,required"`
	// MovesTo is the key type that holds the members in this layout.
	MovesTo Str `yaml:"moves_to,required"`
	// Floor is the first release whose every script that declares the
	// key type reads it with a command of its type before any write: the
	// releases the tripwire refuses atomically.
	Floor   Str `yaml:"floor,required"`
	Summary Str `yaml:"summary"`
}

// Row is the job row.
type Row struct {
	Pos     Pos
	Key     Str     `yaml:"key,required"`
	Summary Str     `yaml:"summary"`
	Fields  []Field `yaml:"fields,required"`
	States  []State `yaml:"states,required"`
}

// Field is one field of the job row.
type Field struct {
	Pos        Pos
	Name       Str          `yaml:"name,required"`
	Role       Str          `yaml:"role,required"`
	Encoding   Str          `yaml:"encoding,required"`
	Initial    *Str         `yaml:"initial"`
	Summary    Str          `yaml:"summary"`
	Deprecated *Deprecation `yaml:"deprecated"`
	// Duty is every-writer (every writer maintains it) or hint.
	Duty Str `yaml:"duty"`
}

// State is one value of the row's state field.
type State struct {
	Pos        Pos
	Name       Str          `yaml:"name,required"`
	Set        Str          `yaml:"set,required"`
	Summary    Str          `yaml:"summary"`
	Deprecated *Deprecation `yaml:"deprecated"`
}

// Sets are the per-queue sorted sets.
type Sets struct {
	Pos       Pos
	Invariant Str   `yaml:"invariant"`
	List      []Set `yaml:"list,required"`
}

// Set is one sorted set and what its score means.
type Set struct {
	Pos        Pos
	Key        Str          `yaml:"key,required"`
	Member     Str          `yaml:"member,required"`
	Score      Str          `yaml:"score,required"`
	Summary    Str          `yaml:"summary"`
	Deprecated *Deprecation `yaml:"deprecated"`
}

// Member is one member of the {emq}: reserve.
type Member struct {
	Pos        Pos
	Member     Str           `yaml:"member,required"`
	Redis      Str           `yaml:"redis,required"`
	Value      *Str          `yaml:"value"`
	Fields     []MemberField `yaml:"fields"`
	Summary    Str           `yaml:"summary"`
	Semantics  Str           `yaml:"semantics"`
	Probe      *Probe        `yaml:"probe"`
	Deprecated *Deprecation  `yaml:"deprecated"`
}

// MemberField is a named field of a hash reserve member, such as a lock
// name; it may have holes (<queue>, <node>).
type MemberField struct {
	Pos        Pos
	Name       Str          `yaml:"name,required"`
	Summary    Str          `yaml:"summary"`
	Deprecated *Deprecation `yaml:"deprecated"`
}

// Class is one wire class: the first word of a script's refusal.
type Class struct {
	Pos        Pos
	Word       Str          `yaml:"word,required"`
	Name       Str          `yaml:"name,required"`
	Summary    Str          `yaml:"summary"`
	Probe      *Probe       `yaml:"probe"`
	Deprecated *Deprecation `yaml:"deprecated"`
}

// Probe is a check, runnable against a live server, that a reserve member
// or a wire class behaves as declared.
type Probe struct {
	Pos     Pos
	Summary Str    `yaml:"summary"`
	Steps   []Step `yaml:"steps,required"`
}

// Step is one check of a probe: a script run or a plain command, and what
// it must answer.
type Step struct {
	Pos     Pos
	Check   Str    `yaml:"check,required"`
	Script  *Str   `yaml:"script"`
	With    Map    `yaml:"with"`
	Command []Str  `yaml:"command"`
	Save    *Str   `yaml:"save"`
	Expect  Expect `yaml:"expect,required"`
}

// Expect is what a probe step must answer. Exactly one of its checks is
// given; Element narrows an array reply to one named element first.
type Expect struct {
	Pos      Pos
	Element  *Str  `yaml:"element"`
	Int      *Int  `yaml:"int"`
	String   *Str  `yaml:"string"`
	Error    *Str  `yaml:"error"`
	Nil      *Bool `yaml:"nil"`
	Positive *Bool `yaml:"positive"`
	Fence    *Str  `yaml:"fence"`
}

// Vocabulary is a closed set of words the wire carries as values: a
// script argument or reply element declared with it takes one of its
// words.
type Vocabulary struct {
	Pos        Pos
	Name       Str          `yaml:"name,required"`
	Summary    Str          `yaml:"summary"`
	Words      []Word       `yaml:"words,required"`
	Deprecated *Deprecation `yaml:"deprecated"`
}

// Snippet is Lua that several script bodies share: a body includes it
// with {{template "<name>"}}, and it is rendered there, with that
// script's keys and arguments, as if written in place.
type Snippet struct {
	Pos     Pos
	Name    Str `yaml:"name,required"`
	Summary Str `yaml:"summary"`
	Lua     Str `yaml:"lua,required"`
}

// Word is one word of a vocabulary.
type Word struct {
	Pos        Pos
	Word       Str          `yaml:"word,required"`
	Summary    Str          `yaml:"summary"`
	Deprecated *Deprecation `yaml:"deprecated"`
}

// Script is one atomic Lua script of the bundle.
type Script struct {
	Pos         Pos
	Name        Str          `yaml:"name,required"`
	Summary     Str          `yaml:"summary"`
	Keys        []ScriptKey  `yaml:"keys,required"`
	Argv        []Arg        `yaml:"argv"`
	Reply       Reply        `yaml:"reply,required"`
	Refusals    []Refusal    `yaml:"refusals"`
	Transitions []Transition `yaml:"transitions"`
	Body        Str          `yaml:"body,required"`
	Deprecated  *Deprecation `yaml:"deprecated"`
}

// ScriptKey is one KEYS slot of a script. A repeated slot is a group of
// zero or more KEYS, the last of the script's, one per element of the
// script's repeated ARGV group.
type ScriptKey struct {
	Pos      Pos
	Name     Str  `yaml:"name,required"`
	Type     Str  `yaml:"type,required"`
	Member   *Str `yaml:"member"`
	Repeated Bool `yaml:"repeated"`
}

// Arg is one ARGV slot of a script. A repeated slot is a group of zero or
// more ARGV, the last of the script's.
type Arg struct {
	Pos      Pos
	Name     Str  `yaml:"name,required"`
	Type     Str  `yaml:"type,required"`
	Summary  Str  `yaml:"summary"`
	Repeated Bool `yaml:"repeated"`
	// Vocabulary names the vocabulary whose words the argument takes
	// (type string only).
	Vocabulary *Str `yaml:"vocabulary"`
	// Min and Max bound an int argument's values (both inclusive): the
	// body refuses a value outside them ({{min "name"}}, {{max "name"}}),
	// and every SDK refuses it before any command is sent, with the
	// bounds the generator emits.
	Min Int `yaml:"min"`
	Max Int `yaml:"max"`
}

// Element is one element of an array reply's record.
type Element struct {
	Pos     Pos
	Name    Str `yaml:"name,required"`
	Type    Str `yaml:"type,required"`
	Summary Str `yaml:"summary"`
	// Vocabulary names the vocabulary whose words the element carries
	// (type string or bytes only).
	Vocabulary *Str `yaml:"vocabulary"`
}

// Reply is the shape of a script's successful reply.
type Reply struct {
	Pos      Pos
	Type     Str          `yaml:"type,required"`
	Summary  Str          `yaml:"summary"`
	Nil      *Str         `yaml:"nil"`
	Repeated Bool         `yaml:"repeated"`
	Values   []ReplyValue `yaml:"values"`
	Elements []Element    `yaml:"elements"`
}

// ReplyValue names one integer reply value.
type ReplyValue struct {
	Pos        Pos
	Value      Int          `yaml:"value,required"`
	Name       Str          `yaml:"name,required"`
	Summary    Str          `yaml:"summary"`
	Deprecated *Deprecation `yaml:"deprecated"`
}

// Refusal is one typed error reply a script may issue.
type Refusal struct {
	Pos     Pos
	ID      Str `yaml:"id,required"`
	Class   Str `yaml:"class,required"`
	Message Str `yaml:"message,required"`
	When    Str `yaml:"when"`
}

// Transition is one state change a script makes; none is the absence of a
// row.
type Transition struct {
	Pos  Pos
	From Str `yaml:"from,required"`
	To   Str `yaml:"to,required"`
}

// Governance holds the change rules and the version history.
type Governance struct {
	Pos     Pos
	Summary Str       `yaml:"summary"`
	Rules   []Rule    `yaml:"rules,required"`
	History []Release `yaml:"history,required"`
}

// Rule states which changes a bump admits.
type Rule struct {
	Pos     Pos
	Bump    Str `yaml:"bump,required"`
	Summary Str `yaml:"summary,required"`
}

// Release is one entry of the version history.
type Release struct {
	Pos     Pos
	Version Str `yaml:"version,required"`
	Status  Str `yaml:"status,required"`
	Summary Str `yaml:"summary"`
}

// Load reads and decodes the manifest at path.
func Load(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes a manifest from data; file names it in errors. It returns
// every shape error found, as *Errors, rather than the first, and no
// manifest when there is any.
func Parse(file string, data []byte) (*Manifest, error) {
	m, _, err := ParsePartial(file, data)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Broken names the top-level sections of a manifest (ids, kinds, keys,
// scripts, ...) that have a shape error: a missing required field, an
// unknown or duplicate one, a value of the wrong type. What was decoded of
// such a section is incomplete and must not be resolved.
type Broken map[string]bool

// ParsePartial decodes a manifest from data as far as its shape allows: it
// returns every shape error (as *Errors), the manifest decoded anyway, and
// the sections that had shape errors, so that a caller can still check the
// sections that are whole. The manifest is nil only when the file is not
// one YAML mapping at all (a syntax error, an empty file).
func ParsePartial(file string, data []byte) (*Manifest, Broken, error) {
	errs := &Errors{File: file}
	seen := checkRaw(errs, data)
	raw := len(errs.List)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			errs.Add(Pos{}, "the manifest is empty")
			return nil, nil, errs.Err()
		}
		errs.Add(syntaxError(err, data))
		return nil, nil, errs.Err()
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		errs.Add(posOf(&extra), "the manifest must be one YAML document; found another")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		errs.Add(Pos{}, "the manifest is empty")
		return nil, nil, errs.Err()
	}
	m := new(Manifest)
	d := decoder{errs: errs, lines: splitLines(data), top: true, broken: Broken{}}
	d.decode(doc.Content[0], reflect.ValueOf(m).Elem(), "manifest")
	if doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, errs.Err()
	}
	values := len(errs.List)
	checkValues(errs, m, d.lines, seen)
	// A hostile character breaks the section it stands in, as a shape
	// error does: its value must not be resolved.
	hostile := append(append([]Error(nil), errs.List[:raw]...), errs.List[values:]...)
	top := doc.Content[0].Content
	for _, e := range hostile {
		for i := 0; i+1 < len(top); i += 2 {
			next := math.MaxInt
			if i+2 < len(top) {
				next = top[i+2].Line
			}
			if e.Pos.Line >= top[i].Line && e.Pos.Line < next {
				d.broken[top[i].Value] = true
			}
		}
	}
	return m, d.broken, errs.Err()
}

// syntaxPos digs the line out of a yaml.v3 syntax error ("yaml: line N:
// ..."), or returns the zero position (the whole file) when it names none.
// yaml.v3 prints the 1-based line of a scanner error but the 0-based line
// of a parser error; the parser's problems are told apart by their text.
func syntaxPos(err error, data []byte) Pos {
	var line int
	if _, e := fmt.Sscanf(err.Error(), "yaml: line %d:", &line); e == nil {
		msg := syntaxMsg(err)
		if parserProblems[msg] {
			line++
		}
		if strings.Contains(msg, "tab character") {
			if p, ok := tabPos(data, line); ok {
				return p
			}
		}
		return Pos{Line: line, Col: 1}
	}
	return Pos{}
}

// tabPos finds the first tab in the indentation of a line at or after
// line, 1-based: yaml.v3 reports a tab that breaks the indentation at the
// line of the scalar before it.
func tabPos(data []byte, line int) (Pos, bool) {
	lines := splitLines(data)
	for i := max(line-1, 0); i < len(lines); i++ {
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " \t"))]
		if col := strings.IndexByte(indent, '\t'); col >= 0 {
			return Pos{Line: i + 1, Col: col + 1}, true
		}
	}
	return Pos{}, false
}

// yamlBreaks are the line breaks yaml.v3 counts lines by: CR LF, and each
// of CR, LF, NEL, LS and PS alone.
var yamlBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// splitLines splits data into lines as yaml.v3 counts them, so that the
// line of a node indexes the same line here.
func splitLines(data []byte) []string {
	return strings.Split(yamlBreaks.Replace(string(data)), "\n")
}

// parserProblems are the problems yaml.v3's parser (not its scanner)
// reports, with a 0-based line.
var parserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

func syntaxMsg(err error) string {
	s := err.Error()
	var line int
	if _, e := fmt.Sscanf(s, "yaml: line %d:", &line); e == nil {
		if i := indexAfterColon(s, 2); i >= 0 {
			return s[i:]
		}
	}
	if len(s) > 6 && s[:6] == "yaml: " {
		return s[6:]
	}
	return s
}

// indexAfterColon returns the index just past the n-th ": " in s.
func indexAfterColon(s string, n int) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == ':' && s[i+1] == ' ' {
			n--
			if n == 0 {
				return i + 2
			}
		}
	}
	return -1
}
