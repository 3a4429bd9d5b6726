// Package plugin is emqgen's contract with targets written outside Go: a
// versioned JSON request that carries everything a target needs (the
// resolved protocol and the rendered Lua bundle), the JSON response in
// which a plugin returns its files, and the host that runs a plugin as a
// process — the request on its standard input, the response on its
// standard output — and holds it to the contract before its files join
// the in-process targets' output.
//
// The request is a DTO built field by field from gen/model and
// gen/bundle, never the internal structs marshalled as they are: its
// shape is fixed by request.schema.json and changes only under the
// version policy in docs/plugins.md. The models are sqlc's process
// plugins (one neutral GenerateRequest on stdin, files on stdout, the core
// owning configuration and output) and protoc's versioned plugin.proto.
package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/target"
)

// RequestSchema and ResponseSchema are the versions of the request the
// host sends and of the response it accepts; each is the value of the
// document's "schema" field. A change that could break a plugin written
// against one version gets a new version.
const (
	RequestSchema  = "emqgen.plugin.request/v1"
	ResponseSchema = "emqgen.plugin.response/v1"
)

// TimeLayout is how the request writes instants: UTC, to the millisecond.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// Request is the document a plugin reads on its standard input.
type Request struct {
	Schema   string         `json:"schema"`
	Emqgen   Emqgen         `json:"emqgen"`
	Plugin   PluginInfo     `json:"plugin"`
	Protocol Protocol       `json:"protocol"`
	Bundle   Bundle         `json:"bundle"`
	Options  map[string]any `json:"options"`
}

// Emqgen is what the host says about itself: the generated-file header
// every returned file must carry.
type Emqgen struct {
	Header Header `json:"header"`
}

// Header is gen/header's vocabulary: the marker phrase, the manifest a
// file names as its source, and the command that regenerates it.
type Header struct {
	Marker     string `json:"marker"`
	Source     string `json:"source"`
	Regenerate string `json:"regenerate"`
}

// PluginInfo names the plugin the request is for and the directory its
// files are written under (relative to the repository root; the paths a
// plugin returns are relative to it).
type PluginInfo struct {
	Name string `json:"name"`
	Out  string `json:"out"`
}

// Protocol is the resolved protocol: every fact of gen/model, in manifest
// order, with the derived values targets use (key shapes, the version
// record, refusal texts) computed by the host so that no plugin
// reimplements them.
type Protocol struct {
	Name          string     `json:"name"`
	Version       Version    `json:"version"`
	VersionRecord string     `json:"version_record"`
	Summary       string     `json:"summary"`
	Server        string     `json:"server"`
	Invariant     string     `json:"invariant"`
	IDs           IDCanon    `json:"ids"`
	Kinds         []Kind     `json:"kinds"`
	WorkKind      string     `json:"work_kind"`
	Queues        Queues     `json:"queues"`
	KeyClasses    []KeyClass `json:"key_classes"`
	KeyTypes      []KeyType  `json:"key_types"`
	Row           Row        `json:"row"`
	Sets          []Set      `json:"sets"`
	Reserve       []Member   `json:"reserve"`
	Classes       []Class    `json:"classes"`
	// Vocabularies are the closed sets of words the wire carries as
	// values, in manifest order; empty before 2.3.0.
	Vocabularies []Vocabulary `json:"vocabularies"`
	Scripts      []Script     `json:"scripts"`
	ProbeIDVars  []string     `json:"probe_id_vars"`
	Governance   Governance   `json:"governance"`
}

// Version is a major.minor.patch version, also as text.
type Version struct {
	Major int    `json:"major"`
	Minor int    `json:"minor"`
	Patch int    `json:"patch"`
	Text  string `json:"text"`
}

// IDCanon is the grammar and numeric layout of branded ids.
type IDCanon struct {
	Length      int         `json:"length"`
	KindLength  int         `json:"kind_length"`
	KindPattern string      `json:"kind_pattern"`
	BodyLength  int         `json:"body_length"`
	Encoding    string      `json:"encoding"`
	Alphabet    string      `json:"alphabet"`
	BodySummary string      `json:"body_summary"`
	Epoch       string      `json:"epoch"`    // TimeLayout
	EpochMS     int64       `json:"epoch_ms"` // Unix milliseconds
	Layout      []Bitfield  `json:"layout"`   // most significant first
	Uniqueness  string      `json:"uniqueness"`
	Examples    []IDExample `json:"examples"`
	Invalid     []string    `json:"invalid"`
}

// Bitfield is one field of the snowflake layout.
type Bitfield struct {
	Name    string `json:"name"`
	Bits    int    `json:"bits"`
	Shift   int    `json:"shift"` // bit position of the field's least significant bit
	Summary string `json:"summary"`
}

// IDExample is a well-formed id and what it decodes to. Value is the
// 64-bit snowflake in decimal, a string so that no JSON reader rounds it.
type IDExample struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Value    string `json:"value"`
	Time     string `json:"time"` // TimeLayout
	TimeMS   int64  `json:"time_ms"`
	Node     int64  `json:"node"`
	Sequence int64  `json:"sequence"`
}

// Kind is a registered id kind.
type Kind struct {
	Name    string `json:"name"`
	Work    bool   `json:"work"`
	Summary string `json:"summary"`
}

// Vocabulary is a closed set of words the wire carries as values. Plural
// is its name in the plural (failure_classes), for the list of its words.
type Vocabulary struct {
	Name    string `json:"name"`
	Plural  string `json:"plural"`
	Summary string `json:"summary"`
	Words   []Word `json:"words"`
}

// Word is one word of a vocabulary.
type Word struct {
	Word    string `json:"word"`
	Summary string `json:"summary"`
}

// Queues is the grammar of queue names.
type Queues struct {
	Pattern   string   `json:"pattern"` // unanchored, as written in the manifest
	MaxLength int      `json:"max_length"`
	Summary   string   `json:"summary"`
	Examples  []string `json:"examples"`
	Invalid   []string `json:"invalid"`
}

// Part is a literal run of a shape or a hole to fill; exactly one of Lit
// and Hole is present.
type Part struct {
	Lit  string `json:"lit,omitempty"`
	Hole string `json:"hole,omitempty"`
}

// KeyClass is one class of the closed key grammar.
type KeyClass struct {
	Name    string `json:"name"`
	Shape   string `json:"shape"`
	Parts   []Part `json:"parts"`
	Summary string `json:"summary"`
}

// KeyType is a per-queue or per-job key type; Shape is its key with the
// type filled in and the other holes left as <hole>.
type KeyType struct {
	Name    string `json:"name"`
	Class   string `json:"class"`
	Redis   string `json:"redis"`
	Shape   string `json:"shape"`
	Parts   []Part `json:"parts"`
	Summary string `json:"summary"`
	// Duty is who must maintain or honour it (every-writer,
	// every-claimer, every-completer or hint).
	Duty string `json:"duty"`
	// Tripwire is the key type's other layout, or nil; Behind the key
	// type whose tripwire guards this one, or "".
	Tripwire *Tripwire `json:"tripwire"`
	Behind   string    `json:"behind"`
}

// Tripwire is a key type's other layout: the value left at the key (of
// redis type Redis), the key type its members move to, and the first
// release whose every script refuses the layout before any write.
type Tripwire struct {
	Redis   string `json:"redis"`
	MovesTo string `json:"moves_to"`
	Floor   string `json:"floor"`
	Summary string `json:"summary"`
}

// Row is the job row.
type Row struct {
	Key     string  `json:"key"`
	Summary string  `json:"summary"`
	Fields  []Field `json:"fields"`
	States  []State `json:"states"`
}

// Field is one field of the job row; Role is state, token or payload.
type Field struct {
	Name     string `json:"name"`
	Role     string `json:"role"`
	Encoding string `json:"encoding"`
	Initial  string `json:"initial"`
	Summary  string `json:"summary"`
}

// State is one value of the row's state field and the key type of the set
// holding ids in it.
type State struct {
	Name    string `json:"name"`
	Set     string `json:"set"`
	Summary string `json:"summary"`
}

// Set is one of the per-queue sorted sets.
type Set struct {
	Key     string `json:"key"`
	Member  string `json:"member"`
	Score   string `json:"score"`
	State   string `json:"state"`
	Lex     bool   `json:"lex"` // every member scores zero: lexicographic order is mint order
	Summary string `json:"summary"`
}

// Member is one member of the reserve. Shape is its whole key; Parts are
// the whole key's parts (the reserve class with the member filled in).
type Member struct {
	Name      string        `json:"name"`
	Ident     string        `json:"ident"`
	HasQueue  bool          `json:"has_queue"`
	Shape     string        `json:"shape"`
	Parts     []Part        `json:"parts"`
	Redis     string        `json:"redis"`
	Value     string        `json:"value"`
	Summary   string        `json:"summary"`
	Semantics string        `json:"semantics"`
	Fields    []MemberField `json:"fields"`
	Probe     Probe         `json:"probe"`
}

// MemberField is a named field of a hash reserve member.
type MemberField struct {
	Name    string `json:"name"`
	Parts   []Part `json:"parts"`
	Summary string `json:"summary"`
}

// Class is one wire class: the first word of a refusal.
type Class struct {
	Word     string   `json:"word"`
	Name     string   `json:"name"`
	Summary  string   `json:"summary"`
	IssuedBy []string `json:"issued_by"`
	Probe    Probe    `json:"probe"`
}

// Probe is a runnable check against a live server; Steps is empty when
// the manifest declares none.
type Probe struct {
	Summary string `json:"summary"`
	Steps   []Step `json:"steps"`
}

// Step is one check of a probe: a script with named ARGV or a command,
// placeholders unexpanded.
type Step struct {
	Check   string   `json:"check"`
	Script  string   `json:"script"`
	With    []KV     `json:"with"`
	Command []string `json:"command"`
	Save    string   `json:"save"`
	Expect  Expect   `json:"expect"`
}

// KV is a named value.
type KV struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Expect is what a step must answer; Kind (int, string, error, nil,
// positive or fence) says which of Int, String and Positive applies.
type Expect struct {
	Element  string `json:"element"`
	Kind     string `json:"kind"`
	Int      int64  `json:"int"`
	String   string `json:"string"`
	Positive bool   `json:"positive"`
}

// Script is one Lua script of the bundle.
type Script struct {
	Name        string       `json:"name"`
	Summary     string       `json:"summary"`
	Scope       string       `json:"scope"`
	Keys        []ScriptKey  `json:"keys"`
	Argv        []Arg        `json:"argv"`
	Reply       Reply        `json:"reply"`
	Refusals    []Refusal    `json:"refusals"`
	Transitions []Transition `json:"transitions"`
	Template    string       `json:"template"` // the body as written in the manifest
	Body        string       `json:"body"`     // the body rendered to Lua
}

// ScriptKey is one KEYS slot; Member is set when Type is "reserve".
// Repeated marks a group of zero or more keys, the script's last, one per
// value of its repeated ARGV group.
type ScriptKey struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Member   string `json:"member"`
	Shape    string `json:"shape"`
	Repeated bool   `json:"repeated"`
}

// Arg is one ARGV slot or reply element. Repeated marks a group of zero
// or more ARGV, the script's last (never a reply element).
type Arg struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Summary  string `json:"summary"`
	Repeated bool   `json:"repeated"`
	// Vocabulary names the vocabulary whose words the slot carries, or
	// is empty.
	Vocabulary string `json:"vocabulary"`
	// Min and Max bound an int argument's values, both inclusive, when
	// the manifest gives them (null: unbounded on that side).
	Min *int64 `json:"min"`
	Max *int64 `json:"max"`
}

// Reply is the shape of a script's reply. Nil, when not empty, says what
// a nil reply means; Repeated marks zero or more records of Elements.
type Reply struct {
	Type     string       `json:"type"`
	Summary  string       `json:"summary"`
	Nil      string       `json:"nil"`
	Repeated bool         `json:"repeated"`
	Values   []ReplyValue `json:"values"`
	Elements []Arg        `json:"elements"`
	Lines    []string     `json:"lines"` // the reply described, as the script headers print it
}

// ReplyValue names one integer reply.
type ReplyValue struct {
	Value   int64  `json:"value"`
	Name    string `json:"name"`
	Summary string `json:"summary"`
}

// Refusal is one typed error reply; Text is the whole reply, the class
// word, a space and the message.
type Refusal struct {
	ID      string `json:"id"`
	Class   string `json:"class"`
	Message string `json:"message"`
	Text    string `json:"text"`
	When    string `json:"when"`
}

// Transition is one state change; "none" is the absence of a row.
type Transition struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Governance holds the change rules and the version history.
type Governance struct {
	Summary string    `json:"summary"`
	Rules   []Rule    `json:"rules"`
	History []Release `json:"history"`
}

// Rule is a bump and what it admits.
type Rule struct {
	Bump    string `json:"bump"`
	Summary string `json:"summary"`
}

// Release is one entry of the version history.
type Release struct {
	Version Version `json:"version"`
	Status  string  `json:"status"`
	Summary string  `json:"summary"`
}

// Bundle is the rendered Lua bundle.
type Bundle struct {
	Digest  string         `json:"digest"`
	Scripts []BundleScript `json:"scripts"` // in manifest order
}

// BundleScript is one script exactly as it is sent with EVAL.
type BundleScript struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	SHA1   string `json:"sha1"`
	Source string `json:"source"`
}

// NewRequest builds the request for the plugin named name writing under
// out, from in and the plugin's options (nil for none). Options must be
// JSON values (as a YAML or JSON decoder produces them).
func NewRequest(in *target.Input, name, out string, options map[string]any) (*Request, error) {
	p, b := in.Protocol, in.Bundle
	if p == nil || b == nil {
		return nil, fmt.Errorf("plugin: the input needs both a protocol and a bundle")
	}
	if options == nil {
		options = map[string]any{}
	}
	ids, err := idCanon(p)
	if err != nil {
		return nil, err
	}
	r := &Request{
		Schema:  RequestSchema,
		Emqgen:  Emqgen{Header: Header{Marker: header.Marker, Source: header.Source, Regenerate: header.Regenerate}},
		Plugin:  PluginInfo{Name: name, Out: out},
		Options: options,
		Protocol: Protocol{
			Name:          p.Name,
			Version:       version(p.Version),
			VersionRecord: p.VersionRecord(),
			Summary:       p.Summary,
			Server:        p.Server,
			Invariant:     p.Invariant,
			IDs:           ids,
			Kinds:         []Kind{},
			WorkKind:      p.WorkKind().Name,
			Queues: Queues{
				Pattern:   p.Queues.Pattern,
				MaxLength: p.Queues.MaxLength,
				Summary:   p.Queues.Summary,
				Examples:  strs(p.Queues.Examples),
				Invalid:   strs(p.Queues.Invalid),
			},
			KeyClasses:   []KeyClass{},
			KeyTypes:     []KeyType{},
			Row:          Row{Key: p.Row.Key, Summary: p.Row.Summary, Fields: []Field{}, States: []State{}},
			Sets:         []Set{},
			Reserve:      []Member{},
			Classes:      []Class{},
			Vocabularies: []Vocabulary{},
			Scripts:      []Script{},
			ProbeIDVars:  strs(model.ProbeIDVars),
			Governance:   Governance{Summary: p.Governance.Summary, Rules: []Rule{}, History: []Release{}},
		},
		Bundle: BundleOf(b),
	}
	pr := &r.Protocol
	for _, k := range p.Kinds {
		pr.Kinds = append(pr.Kinds, Kind{Name: k.Name, Work: k.Work, Summary: k.Summary})
	}
	for _, c := range p.KeyClasses {
		pr.KeyClasses = append(pr.KeyClasses, KeyClass{Name: c.Name, Shape: c.Shape, Parts: parts(c.Parts), Summary: c.Summary})
	}
	for _, t := range p.KeyTypes {
		c, _ := p.KeyClass(t.Class)
		kt := KeyType{Name: t.Name, Class: t.Class, Redis: t.Redis, Shape: p.TypeShape(t.Name), Parts: fill(c.Parts, "type", []model.Part{{Lit: t.Name}}), Summary: t.Summary, Duty: t.Duty, Behind: t.Behind}
		if w := t.Tripwire; w != nil {
			kt.Tripwire = &Tripwire{Redis: w.Redis, MovesTo: w.MovesTo, Floor: w.Floor.String(), Summary: w.Summary}
		}
		pr.KeyTypes = append(pr.KeyTypes, kt)
	}
	for _, f := range p.Row.Fields {
		pr.Row.Fields = append(pr.Row.Fields, Field{Name: f.Name, Role: f.Role, Encoding: f.Encoding, Initial: f.Initial, Summary: f.Summary})
	}
	for _, s := range p.Row.States {
		pr.Row.States = append(pr.Row.States, State{Name: s.Name, Set: s.Set, Summary: s.Summary})
	}
	for _, s := range p.Sets {
		pr.Sets = append(pr.Sets, Set{Key: s.Key, Member: s.Member, Score: s.Score, State: s.State, Lex: s.Score == model.ScoreZero, Summary: s.Summary})
	}
	reserve, _ := p.KeyClass("reserve")
	for _, m := range p.Reserve {
		mr := Member{
			Name: m.Name, Ident: m.Ident(), HasQueue: m.HasQueue(), Shape: p.MemberShape(m),
			Parts: fill(reserve.Parts, "member", m.Parts), Redis: m.Redis, Value: m.Value,
			Summary: m.Summary, Semantics: m.Semantics, Fields: []MemberField{}, Probe: probe(m.Probe),
		}
		for _, f := range m.Fields {
			mr.Fields = append(mr.Fields, MemberField{Name: f.Name, Parts: parts(f.Parts), Summary: f.Summary})
		}
		pr.Reserve = append(pr.Reserve, mr)
	}
	for _, c := range p.Classes {
		pr.Classes = append(pr.Classes, Class{Word: c.Word, Name: c.Name, Summary: c.Summary, IssuedBy: strs(c.IssuedBy), Probe: probe(c.Probe)})
	}
	for _, v := range p.Vocabularies {
		vr := Vocabulary{Name: v.Name, Plural: v.Plural(), Summary: v.Summary, Words: []Word{}}
		for _, w := range v.Words {
			vr.Words = append(vr.Words, Word{Word: w.Word, Summary: w.Summary})
		}
		pr.Vocabularies = append(pr.Vocabularies, vr)
	}
	for _, s := range p.Scripts {
		pr.Scripts = append(pr.Scripts, script(p, s))
	}
	for _, x := range p.Governance.Rules {
		pr.Governance.Rules = append(pr.Governance.Rules, Rule{Bump: x.Bump, Summary: x.Summary})
	}
	for _, x := range p.Governance.History {
		pr.Governance.History = append(pr.Governance.History, Release{Version: version(x.Version), Status: x.Status, Summary: x.Summary})
	}
	return r, nil
}

// Encode returns the request as indented JSON followed by a newline:
// byte for byte the same for the same input.
func (r *Request) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("plugin: encoding the request: %w", err)
	}
	return buf.Bytes(), nil
}

// BundleOf converts a rendered bundle to the form the request carries.
func BundleOf(b *bundle.Bundle) Bundle {
	out := Bundle{Digest: b.Digest, Scripts: []BundleScript{}}
	for _, s := range b.Scripts {
		out.Scripts = append(out.Scripts, BundleScript{Name: s.Name, File: s.File, SHA1: s.SHA1, Source: s.Source})
	}
	return out
}

func version(v model.Semver) Version {
	return Version{Major: v.Major, Minor: v.Minor, Patch: v.Patch, Text: v.String()}
}

func idCanon(p *model.Protocol) (IDCanon, error) {
	c := p.IDs
	out := IDCanon{
		Length: c.Length, KindLength: c.KindLength, KindPattern: c.KindPattern, BodyLength: c.BodyLength,
		Encoding: c.Encoding, Alphabet: c.Alphabet, BodySummary: c.BodySummary,
		Epoch: c.Epoch.UTC().Format(TimeLayout), EpochMS: c.Epoch.UnixMilli(),
		Layout: []Bitfield{}, Uniqueness: c.Uniqueness, Examples: []IDExample{}, Invalid: strs(c.Invalid),
	}
	for _, f := range c.Layout {
		out.Layout = append(out.Layout, Bitfield{Name: f.Name, Bits: f.Bits, Shift: f.Shift, Summary: f.Summary})
	}
	for _, e := range c.Examples {
		d, err := c.ParseID(e.ID)
		if err != nil {
			return IDCanon{}, fmt.Errorf("plugin: id example: %w", err)
		}
		out.Examples = append(out.Examples, IDExample{
			ID: e.ID, Kind: d.Kind, Value: strconv.FormatUint(d.Value, 10),
			Time: e.Time.UTC().Format(TimeLayout), TimeMS: e.Time.UnixMilli(), Node: e.Node, Sequence: e.Sequence,
		})
	}
	return out, nil
}

func script(p *model.Protocol, s model.Script) Script {
	out := Script{
		Name: s.Name, Summary: s.Summary, Scope: s.Scope,
		Keys: []ScriptKey{}, Argv: args(s.Argv), Refusals: []Refusal{}, Transitions: []Transition{},
		Template: s.Template, Body: s.Body,
		Reply: Reply{
			Type: s.Reply.Type, Summary: s.Reply.Summary, Nil: s.Reply.Nil, Repeated: s.Reply.Repeated,
			Values: []ReplyValue{}, Elements: args(s.Reply.Elements), Lines: strs(s.ReplyLines()),
		},
	}
	for _, k := range s.Keys {
		out.Keys = append(out.Keys, ScriptKey{Name: k.Name, Type: k.Type, Member: k.Member, Shape: p.KeyShape(k), Repeated: k.Repeated})
	}
	for _, v := range s.Reply.Values {
		out.Reply.Values = append(out.Reply.Values, ReplyValue{Value: v.Value, Name: v.Name, Summary: v.Summary})
	}
	for _, r := range s.Refusals {
		out.Refusals = append(out.Refusals, Refusal{ID: r.ID, Class: r.Class, Message: r.Message, Text: r.Text(), When: r.When})
	}
	for _, t := range s.Transitions {
		out.Transitions = append(out.Transitions, Transition{From: t.From, To: t.To})
	}
	return out
}

func probe(p model.Probe) Probe {
	out := Probe{Summary: p.Summary, Steps: []Step{}}
	for _, s := range p.Steps {
		st := Step{Check: s.Check, Script: s.Script, With: []KV{}, Command: strs(s.Command), Save: s.Save,
			Expect: Expect{Element: s.Expect.Element, Kind: s.Expect.Kind, Int: s.Expect.Int, String: s.Expect.String, Positive: s.Expect.Positive}}
		for _, kv := range s.With {
			st.With = append(st.With, KV{Name: kv.Key, Value: kv.Value})
		}
		out.Steps = append(out.Steps, st)
	}
	return out
}

func args(in []model.Arg) []Arg {
	out := []Arg{}
	for _, a := range in {
		out = append(out, Arg{Name: a.Name, Type: a.Type, Summary: a.Summary, Repeated: a.Repeated, Vocabulary: a.Vocabulary, Min: a.Min, Max: a.Max})
	}
	return out
}

func parts(in []model.Part) []Part {
	out := []Part{}
	for _, p := range in {
		out = append(out, Part{Lit: p.Lit, Hole: p.Hole})
	}
	return out
}

// fill returns in with every hole named hole replaced by sub, adjacent
// literals merged.
func fill(in []model.Part, hole string, sub []model.Part) []Part {
	out := []Part{}
	add := func(p model.Part) {
		if p.Hole == "" && len(out) > 0 && out[len(out)-1].Hole == "" {
			out[len(out)-1].Lit += p.Lit
			return
		}
		out = append(out, Part{Lit: p.Lit, Hole: p.Hole})
	}
	for _, p := range in {
		if p.Hole == hole {
			for _, s := range sub {
				add(s)
			}
			continue
		}
		add(p)
	}
	return out
}

func strs(in []string) []string {
	if in == nil {
		return []string{}
	}
	return append([]string{}, in...)
}
