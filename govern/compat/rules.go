package compat

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Rule classifies one kind of manifest change. Rules are tried in the
// order of Rules(); each explains the changes it matches, so that a later,
// broader rule never sees them. A change no rule explains is reported as
// UNCLASSIFIED_CHANGE and requires a major: the classifier fails closed.
type Rule struct {
	// ID names the rule in findings, in the style of buf breaking:
	// <ELEMENT>_NO_DELETE, <ELEMENT>_SAME_<ATTR>, <ELEMENT>_ADDED.
	ID string
	// Bump is the version bump a change of this kind requires.
	Bump Bump
	// Wire is false for changes that touch no byte a client or server
	// exchanges (prose, examples, governance text): they may land without
	// a version change.
	Wire bool
	// Purpose says why the change requires Bump.
	Purpose string
	// Category is the strictness category the rule belongs to: CategoryWire
	// (empty reads as wire) for what Lua and raw-Redis consumers see, or
	// CategoryAPI for what only users of the generated APIs see.
	Category string

	match matcher
	say   func(g *group) string
}

// The rule categories. A report judged under CategoryWire counts only
// wire rules; under CategoryWireAPI (the default) it counts both.
const (
	CategoryWire    = "wire"
	CategoryAPI     = "api"
	CategoryWireAPI = "wire+api"
)

// Categories are the values -category accepts.
var Categories = []string{CategoryWire, CategoryWireAPI}

// Unclassified is the rule of changes no other rule recognises.
const Unclassified = "UNCLASSIFIED_CHANGE"

// docNames are the fields that hold prose only.
// A reply's nil is the prose of when the reply is nil: its text is
// documentation, while its presence (whether the reply may be nil) is
// part of the reply's shape.
var docNames = map[string]bool{"summary": true, "semantics": true, "invariant": true, "when": true, "server": true, "check": true, "uniqueness": true, "nil": true, "reason": true, "meaning": true}

// Rules returns every manifest rule, in the order they are tried. The
// artifact rules (ArtifactRules) and UNCLASSIFIED_CHANGE come after them.
func Rules() []Rule {
	return []Rule{
		// History: recording the new version is the point of a release.
		{ID: "HISTORY_ENTRY_ADDED", Bump: None, Purpose: "A release records its version at the end of the history; that is bookkeeping, not a change of the protocol.",
			match: historyAdded, say: func(g *group) string { return fmt.Sprintf("history entry %s added", g.id(0)) }},
		{ID: "HISTORY_RELEASED", Bump: None, Purpose: "The entry that was current is marked released or frozen when the next version becomes current.",
			match: subtree("governance.history[*].status", func(g *group) bool {
				return len(g.changes) == 1 && g.changes[0].kind == modified && g.changes[0].old.value == "current" && (g.changes[0].new.value == "released" || g.changes[0].new.value == "frozen")
			}),
			say: changed("history entry %s: status")},

		// Entries deleted and added.
		// Tombstones: a retired name never returns.
		{ID: "RETIRED_NO_REUSE", Bump: Invalid, Wire: true, Purpose: "A retired name (a tombstone under retired) never returns, with its old meaning or another: stored data, old clients and old docs still read it the old way. Choose another name.",
			match: reused, say: func(g *group) string {
				return fmt.Sprintf("%s added, but %s %q is retired (tombstone %s)", g.id(0), g.id(1), g.id(2), g.id(3))
			}},
		{ID: "RETIRED_NO_DELETE", Bump: Invalid, Wire: true, Purpose: "A tombstone is the memory that a name may not return; removing it is refused at any bump.",
			match: element(removed, "retired[*]"), say: sayf("tombstone %q removed")},
		{ID: "RETIRED_ADDED", Bump: None, Purpose: "Recording a retired name is bookkeeping: it changes nothing on the wire and only forbids the name's return.",
			match: element(added, "retired[*]"), say: sayf("tombstone %q added")},
		{ID: "RETIRED_SAME_SINCE", Bump: Invalid, Wire: true, Purpose: "The version that retired a name is history; it is never rewritten.",
			match: subtree("retired[*].since"), say: changed("tombstone %q: since")},

		// Deprecation markers.
		{ID: "DEPRECATED_ADDED", Bump: Minor, Wire: true, Purpose: "A deprecation announces a removal at a later major: it changes no byte, but users are told (in the generated docs and code) in a release of its own.",
			match: deprecation(func(o, n bool) bool { return !o && n }), say: func(g *group) string {
				return fmt.Sprintf("%s deprecated since %s", g.id(0), g.d.new[g.root+".since"].value)
			}},
		{ID: "DEPRECATION_WITHDRAWN", Bump: Patch, Purpose: "Withdrawing a deprecation keeps the element; the announcement of its removal is taken back.",
			match: deprecation(func(o, n bool) bool { return o && !n }), say: func(g *group) string {
				return fmt.Sprintf("%s no longer deprecated (was since %s)", g.id(0), g.d.old[g.root+".since"].value)
			}},
		{ID: "DEPRECATED_SAME_SINCE", Bump: Invalid, Wire: true, Purpose: "The version that announced a deprecation is history; it is never rewritten.",
			match: deprecation(func(o, n bool) bool { return o && n }, ".since"), say: func(g *group) string {
				return fmt.Sprintf("%s: deprecated since %s → %s", g.id(0), g.d.old[g.root].value, g.d.new[g.root].value)
			}},

		// Entries deleted and added.
		{ID: "KIND_NO_DELETE", Bump: Major, Wire: true, Purpose: "Ids of a deleted kind stop parsing in every client that is upgraded while they are still stored.",
			match: element(removed, "kinds[*]"), say: sayf("kind %q deleted")},
		{ID: "KIND_ADDED", Bump: Minor, Wire: true, Purpose: "A new kind is additive registration: old clients never mint it, and no row key changes.",
			match: element(added, "kinds[*]"), say: sayf("kind %q added")},
		{ID: "KEY_CLASS_NO_DELETE", Bump: Major, Wire: true, Purpose: "Keys of a deleted class become unreachable and its key types lose their shape.",
			match: element(removed, "keys.classes[*]"), say: sayf("key class %q deleted")},
		{ID: "KEY_CLASS_ADDED", Bump: Minor, Wire: true, Purpose: "A new key class widens the grammar without touching an existing key.",
			match: element(added, "keys.classes[*]"), say: sayf("key class %q added")},
		{ID: "KEY_TYPE_NO_DELETE", Bump: Major, Wire: true, Purpose: "Clients still write and read a deleted key type; its keys would be orphaned.",
			match: element(removed, "keys.types[*]"), say: sayf("key type %q deleted")},
		{ID: "KEY_TYPE_ADDED_EVERY_WRITER", Bump: Major, Wire: true, Purpose: "A key type with duty every-writer must be kept by every writer; a client of a lower minor never writes it, so adding one is not additive.",
			match: element(added, "keys.types[*]", dutyIs("every-writer")), say: sayf("key type %q added with duty every-writer")},
		{ID: "KEY_TYPE_ADDED_BEHIND_TRIPWIRE", Bump: Minor, Wire: true, Purpose: "A key type with a policy's duty (every-claimer, every-completer) binds every claimer or completer, and a frozen script honours nothing added after it; declared behind a key type's tripwire, it governs only queues in the tripwire's layout, where every script of a release from the tripwire's floor fails WRONGTYPE before any write (the gate proves the floor from the frozen releases: TRIPWIRE_UNPROVEN). Older claimers are refused there, never silently wrong.",
			match: element(added, "keys.types[*]", dutyIn("every-claimer", "every-completer"), hasBehind), say: func(g *group) string {
				return fmt.Sprintf("key type %q added with duty %s, behind the tripwire of %q", g.id(0), g.d.new[g.root+".duty"].value, g.d.new[g.root+".behind"].value)
			}},
		{ID: "KEY_TYPE_ADDED_UNGUARDED_POLICY", Bump: Major, Wire: true, Purpose: "A key type with a policy's duty and no tripwire in front of it binds the claimers of every older minor, which keep claiming as if it were not there: not additive.",
			match: element(added, "keys.types[*]", dutyIn("every-claimer", "every-completer")), say: sayf("key type %q added with a policy's duty and no tripwire behind it")},
		{ID: "KEY_TYPE_ADDED", Bump: Minor, Wire: true, Purpose: "A new key type is additive registration (spec §8): old clients never touch it.",
			match: element(added, "keys.types[*]"), say: sayf("key type %q added")},
		{ID: "ROW_FIELD_SAME_NAME", Bump: Major, Wire: true, Purpose: "A renamed row field is a new field to every stored row and to every client of the old name.",
			match: renamed("row.fields[*]", ".role"), say: func(g *group) string {
				return fmt.Sprintf("row field %q renamed to %q (role %s)", g.id(0), g.id(1), g.d.new[g.root+".role"].value)
			}},
		{ID: "ROW_FIELD_NO_DELETE", Bump: Major, Wire: true, Purpose: "Every stored row carries the field and every client reads it.",
			match: element(removed, "row.fields[*]"), say: sayf("row field %q deleted")},
		{ID: "ROW_FIELD_ADDED", Bump: Invalid, Wire: true, Purpose: "The row is exactly three fields (state, token, payload) by the spec, whatever the duty: a client of any version writes rows without a fourth. Per-job data beyond them belongs in a key type of its own in the queue's slot (a queue-class hash keyed by job id, added as KEY_TYPE_ADDED); a row field added is refused at any bump.",
			match: element(added, "row.fields[*]"), say: sayf("row field %q added: the row is exactly three fields; keep per-job data in a key type of its own (a queue-class hash keyed by job id)")},
		{ID: "STATE_NO_DELETE", Bump: Major, Wire: true, Purpose: "Stored rows may hold the deleted state value; no client could place them.",
			match: element(removed, "row.states[*]"), say: sayf("state %q deleted")},
		{ID: "STATE_ADDED", Bump: Major, Wire: true, Purpose: "A client of a lower minor cannot read a row in a state it does not know, nor keep the row/set invariant for it.",
			match: element(added, "row.states[*]"), say: sayf("state %q added")},
		{ID: "SET_NO_DELETE", Bump: Major, Wire: true, Purpose: "Clients index jobs in every set; a deleted set strands its ids.",
			match: element(removed, "sets.list[*]"), say: sayf("set %q deleted")},
		{ID: "SET_ADDED", Bump: Minor, Wire: true, Purpose: "A new set is registration of a new key type's meaning; old clients never touch it.",
			match: element(added, "sets.list[*]"), say: sayf("set %q added")},
		{ID: "RESERVE_MEMBER_NO_DELETE", Bump: Major, Wire: true, Purpose: "Clients of this major read and write every reserve member.",
			match: element(removed, "reserve[*]"), say: sayf("reserve member %q deleted")},
		{ID: "RESERVE_MEMBER_ADDED_WITHOUT_PROBE", Bump: Invalid, Wire: true, Purpose: "A reserve member is registered together with the probe that proves it on a live server (spec §8); without one it is refused at any bump.",
			match: element(added, "reserve[*]", noProbe), say: sayf("reserve member %q added without a probe")},
		{ID: "RESERVE_MEMBER_ADDED", Bump: Minor, Wire: true, Purpose: "A new reserve member with its probe is additive registration (spec §8).",
			match: element(added, "reserve[*]"), say: sayf("reserve member %q added with its probe")},
		{ID: "RESERVE_MEMBER_FIELD_NO_DELETE", Bump: Major, Wire: true, Purpose: "Clients still take and release the deleted lock name, or read the deleted field.",
			match: element(removed, "reserve[*].fields[*]"), say: sayf("reserve member %q: field %q deleted")},
		{ID: "RESERVE_MEMBER_FIELD_ADDED", Bump: Minor, Wire: true, Purpose: "A new field of a hash member (a new lock name) is additive: old clients never use it.",
			match: element(added, "reserve[*].fields[*]"), say: sayf("reserve member %q: field %q added")},
		{ID: "RESERVE_MEMBER_PROBE_NO_DELETE", Bump: Invalid, Wire: true, Purpose: "Every reserve member keeps a probe; removing it is refused at any bump.",
			match: subtree("reserve[*].probe", probeGone), say: sayf("reserve member %q: probe removed")},
		{ID: "CLASS_SAME_WORD", Bump: Major, Wire: true, Purpose: "Clients recognise refusals by the class word; a renamed word is an unknown error to every deployed client.",
			match: renamed("classes[*]", ".name"), say: func(g *group) string {
				return fmt.Sprintf("wire class %q renamed to %q", g.id(0), g.id(1))
			}},
		{ID: "CLASS_NO_DELETE", Bump: Major, Wire: true, Purpose: "Clients map refusals to typed errors by class; scripts of this major may still issue it.",
			match: element(removed, "classes[*]"), say: sayf("wire class %q deleted")},
		{ID: "CLASS_ADDED_WITHOUT_PROBE", Bump: Invalid, Wire: true, Purpose: "A wire class is registered together with the probe that provokes it on a live server (spec §8); without one it is refused at any bump.",
			match: element(added, "classes[*]", noProbe), say: sayf("wire class %q added without a probe")},
		{ID: "CLASS_ADDED", Bump: Minor, Wire: true, Purpose: "A new wire class with its probe is additive registration (spec §8); only new scripts issue it.",
			match: element(added, "classes[*]"), say: sayf("wire class %q added with its probe")},
		{ID: "CLASS_PROBE_NO_DELETE", Bump: Invalid, Wire: true, Purpose: "Every wire class keeps a probe; removing it is refused at any bump.",
			match: subtree("classes[*].probe", probeGone), say: sayf("wire class %q: probe removed")},
		{ID: "VOCABULARY_NO_DELETE", Bump: Major, Wire: true, Purpose: "Stored records and deployed clients still carry the words of a deleted vocabulary, and code compiled against its type and constants stops compiling.",
			match: element(removed, "vocabularies[*]"), say: sayf("vocabulary %q deleted")},
		{ID: "VOCABULARY_ADDED", Bump: Minor, Wire: true, Purpose: "A new vocabulary is additive registration: no existing argument or element carries its words, and old clients never see them.",
			match: element(added, "vocabularies[*]"), say: sayf("vocabulary %q added")},
		{ID: "WORD_NO_DELETE", Bump: Major, Wire: true, Purpose: "Stored records may hold the deleted word and clients of this major still write it; readers of the new vocabulary would not know it.",
			match: element(removed, "vocabularies[*].words[*]"), say: sayf("vocabulary %q: word %q deleted")},
		{ID: "WORD_ADDED", Bump: Minor, Wire: true, Purpose: "A new word is additive: old clients never write it, and their readers keep a word they do not know as read (Registered, isX and is_x tell it apart).",
			match: element(added, "vocabularies[*].words[*]"), say: sayf("vocabulary %q: word %q added")},
		{ID: "SCRIPT_NO_DELETE", Bump: Major, Wire: true, Purpose: "Clients of this major call every script of the bundle.",
			match: element(removed, "scripts[*]"), say: sayf("script %q deleted")},
		{ID: "SCRIPT_ADDED", Bump: Minor, Wire: true, Purpose: "A new script is additive registration: old clients never call it.",
			match: element(added, "scripts[*]"), say: sayf("script %q added")},
		{ID: "SCRIPT_REFUSAL_NO_DELETE", Bump: Major, Wire: true, Purpose: "Callers rely on the refusal to keep the state it guards; without it the script does something else.",
			match: element(removed, "scripts[*].refusals[*]"), say: sayf("script %q: refusal %q deleted")},
		{ID: "SCRIPT_REFUSAL_ADDED", Bump: Major, Wire: true, Purpose: "A caller of the old contract meets an error it was promised it would not.",
			match: element(added, "scripts[*].refusals[*]"), say: sayf("script %q: refusal %q added")},

		// Text only.
		{ID: "DOCS_CHANGED", Bump: Patch, Purpose: "Summaries, semantics prose and check labels are documentation: nothing on the wire changes.",
			match: docsChanged, say: func(g *group) string { return fmt.Sprintf("%s → %s", clip(g.oldValue("")), clip(g.newValue(""))) }},

		// Attributes of entries that exist on both sides.
		{ID: "PROTOCOL_SAME_NAME", Bump: Major, Wire: true, Purpose: "The protocol's name is the prefix of the version record; every fence would refuse.",
			match: subtree("protocol"), say: changed("protocol name")},
		{ID: "ID_SAME_ORDERING", Bump: Major, Wire: true, Purpose: "Ids sort by their text: reordering the alphabet or the snowflake fields reorders every stored id and every set scored by id.",
			match: idOrdering, say: func(g *group) string { return "id ordering changed: " + g.details() }},
		{ID: "ID_SAME_FORMAT", Bump: Major, Wire: true, Purpose: "Every stored id and every id in a payload would stop parsing or decode to other facts.",
			match: firstOf(subtree("ids.length"), subtree("ids.kind"), subtree("ids.body.length"), subtree("ids.body.encoding"), subtree("ids.body.alphabet"), subtree("ids.snowflake")),
			say:   func(g *group) string { return "id format changed: " + g.details() }},
		{ID: "EXAMPLES_CHANGED", Bump: Patch, Purpose: "Examples are test vectors checked against the grammar they illustrate; the grammar is unchanged.",
			match: firstOf(subtree("ids.examples"), subtree("ids.invalid_examples"), subtree("queues.examples"), subtree("queues.invalid_examples")),
			say:   func(g *group) string { return "examples changed: " + g.details() }},
		{ID: "KIND_SAME_WORK", Bump: Major, Wire: true, Purpose: "The work kind is the only kind admitted in the job position; moving it refuses every stored job.",
			match: subtree("kinds[*].work"), say: changed("kind %q: work")},
		{ID: "QUEUE_SAME_PATTERN", Bump: Major, Wire: true, Purpose: "Queue names admitted by one side are refused by the other; existing queues may become unreachable.",
			match: subtree("queues.pattern"), say: changed("queue pattern")},
		{ID: "KEY_CLASS_SAME_SHAPE", Bump: Major, Wire: true, Purpose: "Every key of the class moves; clients of the old shape write elsewhere.",
			match: subtree("keys.classes[*].shape"), say: changed("key class %q: shape")},
		{ID: "KEY_TYPE_SAME_REDIS", Bump: Major, Wire: true, Purpose: "Clients of the old type get WRONGTYPE on every key of it.",
			match: subtree("keys.types[*].redis"), say: changed("key type %q: redis type")},
		{ID: "KEY_TYPE_SAME_DUTY", Bump: Major, Wire: true, Purpose: "A duty raised to every-writer binds writers of lower minors that never kept it; a duty lowered to hint lets new writers skip what old readers rely on.",
			match: subtree("keys.types[*].duty"), say: changed("key type %q: duty")},
		{ID: "ROW_FIELD_SAME_DUTY", Bump: Major, Wire: true, Purpose: "A duty raised to every-writer binds writers of lower minors that never kept it; a duty lowered to hint lets new writers skip what old readers rely on.",
			match: subtree("row.fields[*].duty"), say: changed("row field %q: duty")},
		{ID: "KEY_TYPE_TRIPWIRE_ADDED", Bump: Minor, Wire: true, Purpose: "A tripwire is another layout of an existing key type, which only new scripts lay and read: every older script that declares the key fails WRONGTYPE on the tripwire's value before any write, from the tripwire's floor on, which the gate proves against every frozen release (TRIPWIRE_UNPROVEN otherwise). A queue in the classic layout is untouched.",
			match: subtree("keys.types[*].tripwire", oldLacks(".tripwire")), say: func(g *group) string {
				return fmt.Sprintf("key type %q: tripwire added (a %s at the key, its members at %s, floor %s)", g.id(0), g.d.new[g.root+".redis"].value, g.d.new[g.root+".moves_to"].value, g.d.new[g.root+".floor"].value)
			}},
		{ID: "KEY_TYPE_SAME_TRIPWIRE", Bump: Major, Wire: true, Purpose: "Every script since the tripwire reads the layout it declares: another value type, another key for the members or a lifted tripwire strands the queues in it, and a lower floor admits releases that write before they look.",
			match: subtree("keys.types[*].tripwire"), say: func(g *group) string { return fmt.Sprintf("key type %q: tripwire changed: %s", g.id(0), g.details()) }},
		{ID: "KEY_TYPE_SAME_BEHIND", Bump: Major, Wire: true, Purpose: "The tripwire a policy's key type stands behind is what keeps older scripts away from it; moving it, or dropping it, exposes the policy to them.",
			match: subtree("keys.types[*].behind"), say: changed("key type %q: behind")},
		{ID: "KEY_TYPE_SAME_CLASS", Bump: Major, Wire: true, Purpose: "The key type's keys move to another pattern; clients of the old one lose them.",
			match: subtree("keys.types[*].class"), say: changed("key type %q: class")},
		{ID: "ROW_SAME_KEY", Bump: Major, Wire: true, Purpose: "Rows move to another key type; every stored row is lost to new clients.",
			match: subtree("row.key"), say: changed("row key type")},
		{ID: "ROW_FIELD_SAME_ROLE", Bump: Major, Wire: true, Purpose: "A field repurposed (spec §8) means one thing to old clients and another to new ones.",
			match: subtree("row.fields[*].role"), say: changed("row field %q repurposed: role")},
		{ID: "ROW_FIELD_SAME_ENCODING", Bump: Major, Wire: true, Purpose: "Stored values were written in the old encoding.",
			match: subtree("row.fields[*].encoding"), say: changed("row field %q: encoding")},
		{ID: "ROW_FIELD_SAME_INITIAL", Bump: Major, Wire: true, Purpose: "Rows admitted by old and new clients would start differently.",
			match: subtree("row.fields[*].initial"), say: func(g *group) string { return fmt.Sprintf("row field %q: initial %s", g.id(0), g.details()) }},
		{ID: "STATE_SAME_SET", Bump: Major, Wire: true, Purpose: "Old clients index the state's ids in the old set; the row/set invariant breaks.",
			match: subtree("row.states[*].set"), say: changed("state %q: set")},
		{ID: "SET_SAME_SCORE", Bump: Major, Wire: true, Purpose: "Old clients score members by the old meaning; promote, reap and claim order go wrong.",
			match: subtree("sets.list[*].score"), say: changed("set %q: score")},
		{ID: "SET_SAME_MEMBER", Bump: Major, Wire: true, Purpose: "Old clients read members as the old kind of thing.",
			match: subtree("sets.list[*].member"), say: changed("set %q: member")},
		{ID: "RESERVE_MEMBER_SAME_REDIS", Bump: Major, Wire: true, Purpose: "Clients of the old type get WRONGTYPE on the member.",
			match: subtree("reserve[*].redis"), say: changed("reserve member %q: redis type")},
		{ID: "RESERVE_MEMBER_SAME_VALUE", Bump: Major, Wire: true, Purpose: "The member's stored value is read by every client of this major in its old form.",
			match: subtree("reserve[*].value"), say: func(g *group) string { return fmt.Sprintf("reserve member %q: value %s", g.id(0), g.details()) }},
		{ID: "PROBE_STEP_ADDED", Bump: Minor, Wire: true, Purpose: "A step appended to a reserve member's or a wire class's probe that runs a script new in this version, or is appended beside one (a setup or a check it needs): clients of the old version run the old steps, unchanged; the new step puts the new script's behaviour on a live server's record (what WITNESS_SCRIPT_UNCOVERED asks of every new script).",
			match: element(added, "reserve[*].probe.steps[*]", appended, runsNewScript), say: func(g *group) string {
				return fmt.Sprintf("reserve member %q: probe step %s added, %s", g.id(0), g.id(1), stepAdded(g))
			}},
		{ID: "CLASS_PROBE_STEP_ADDED", Bump: Minor, Wire: true, Purpose: "A step appended to a wire class's probe that runs a script new in this version, or is appended beside one: the old steps are unchanged.",
			match: element(added, "classes[*].probe.steps[*]", appended, runsNewScript), say: func(g *group) string {
				return fmt.Sprintf("wire class %q: probe step %s added, %s", g.id(0), g.id(1), stepAdded(g))
			}},
		{ID: "RESERVE_MEMBER_SAME_PROBE", Bump: Major, Wire: true, Purpose: "A changed probe expectation is a changed behaviour of the member: live servers of this major would fail it or pass it for the other meaning.",
			match: subtree("reserve[*].probe"), say: func(g *group) string {
				return fmt.Sprintf("reserve member %q: probe changed: %s", g.id(0), g.details())
			}},
		{ID: "CLASS_SAME_NAME", Bump: Major, Wire: false, Category: CategoryAPI, Purpose: "The class's Go name names its sentinel error and class constant: code compiled against them stops compiling. The wire word is unchanged, so Lua and raw-Redis consumers see nothing.",
			match: subtree("classes[*].name"), say: changed("wire class %q: Go name")},
		{ID: "CLASS_SAME_PROBE", Bump: Major, Wire: true, Purpose: "A changed probe expectation is a changed behaviour of the class on live servers.",
			match: subtree("classes[*].probe"), say: func(g *group) string { return fmt.Sprintf("wire class %q: probe changed: %s", g.id(0), g.details()) }},
		{ID: "CLASS_MESSAGE_CHANGED", Bump: Patch, Wire: true, Purpose: "Clients match the class word, never the message text after it; the text is for people.",
			match: subtree("scripts[*].refusals[*].message"), say: changed("script %q: refusal %q message")},
		{ID: "SCRIPT_REFUSAL_SAME_CLASS", Bump: Major, Wire: true, Purpose: "Callers map the refusal to a typed error by its class.",
			match: subtree("scripts[*].refusals[*].class"), say: changed("script %q: refusal %q class")},
		{ID: "SCRIPT_REPEATED_KEYS_ADDED", Bump: Major, Wire: true, Purpose: "A repeated KEYS group added to an existing script changes how many keys every caller passes and where the script reads them: callers of the old contract send none, and the script's per-id keys go missing.",
			match: element(added, "scripts[*].keys[*]", newRepeated), say: sayf("script %q: repeated key group %q added")},
		{ID: "SCRIPT_REPEATED_ARGV_ADDED", Bump: Major, Wire: true, Purpose: "A repeated ARGV group added to an existing script changes how many arguments every caller passes; callers of the old contract send none.",
			match: element(added, "scripts[*].argv[*]", newRepeated), say: sayf("script %q: repeated argument group %q added")},
		{ID: "SCRIPT_KEY_SAME_REPEATED", Bump: Major, Wire: true, Purpose: "Turning a KEYS slot into a repeated group, or back, changes how many keys callers pass and how the script indexes them.",
			match: subtree("scripts[*].keys[*].repeated", slotOnBothSides), say: changed("script %q: key %q: repeated")},
		{ID: "SCRIPT_ARG_SAME_REPEATED", Bump: Major, Wire: true, Purpose: "Turning an ARGV slot into a repeated group, or back, changes how many arguments callers pass and how the script indexes them.",
			match: subtree("scripts[*].argv[*].repeated", slotOnBothSides), say: changed("script %q: argument %q: repeated")},
		{ID: "SCRIPT_ARG_SAME_VOCABULARY", Bump: Major, Wire: true, Purpose: "An argument's vocabulary is its contract: gaining one refuses values callers of the old contract send, losing or changing one admits words old readers do not know, and the argument's type in every SDK changes.",
			match: subtree("scripts[*].argv[*].vocabulary", argOnBothSides), say: func(g *group) string {
				return fmt.Sprintf("script %q: argument %q: vocabulary %s → %s", g.id(0), g.id(1), orNone(g.oldValue("")), orNone(g.newValue("")))
			}},
		{ID: "SCRIPT_SAME_KEYS", Bump: Major, Wire: true, Purpose: "Callers pass KEYS by position; a slot added, removed, retyped or reordered sends keys to the wrong place.",
			match: subtree("scripts[*].keys"), say: func(g *group) string { return fmt.Sprintf("script %q: KEYS changed: %s", g.id(0), g.details()) }},
		{ID: "SCRIPT_SAME_ARGV", Bump: Major, Wire: true, Purpose: "Callers pass ARGV by position; a slot added, removed, retyped or reordered sends arguments to the wrong place.",
			match: subtree("scripts[*].argv"), say: func(g *group) string { return fmt.Sprintf("script %q: ARGV changed: %s", g.id(0), g.details()) }},
		{ID: "SCRIPT_REPLY_VALUE_SAME_NAME", Bump: Major, Wire: false, Category: CategoryAPI, Purpose: "A reply value's name names its generated constant; the integer on the wire is unchanged, so only code compiled against the constant breaks.",
			match: subtree("scripts[*].reply.values[*].name"), say: changed("script %q: reply value %s name")},
		{ID: "SCRIPT_SAME_REPLY", Bump: Major, Wire: true, Purpose: "Callers decode the reply by its shape: its type, its values, its elements by position and whether it may be nil.",
			match: subtree("scripts[*].reply"), say: func(g *group) string { return fmt.Sprintf("script %q: reply changed: %s", g.id(0), g.details()) }},
		{ID: "SCRIPT_SAME_TRANSITIONS", Bump: Major, Wire: true, Purpose: "Callers rely on the state changes a script makes; other transitions break the row/set invariant as they know it.",
			match: subtree("scripts[*].transitions"), say: func(g *group) string { return fmt.Sprintf("script %q: transitions changed: %s", g.id(0), g.details()) }},
		{ID: "SCRIPT_SOURCE_RESHAPED", Bump: None, Wire: true, Purpose: "The body's source changed (moved into a snippet, say) but it renders the same Lua on both sides: the server runs the same script, with the same SHA-1.",
			match: subtree("scripts[*].body", sameLua), say: func(g *group) string {
				return fmt.Sprintf("script %q: body source changed, rendered Lua identical", g.id(0))
			}},
		{ID: "SNIPPET_SOURCE_RESHAPED", Bump: None, Wire: true, Purpose: "A snippet's Lua changed while every script of the baseline renders the same Lua on both sides (it now serves new scripts too, through a template condition): no script a server already runs changed; the new ones are judged as added.",
			match: subtree("snippets[*].lua", oldHas(".lua"), noBaselineLuaChanged), say: sayf("snippet %q: Lua changed, and every script of the baseline renders the same Lua")},
		{ID: "SCRIPT_BODY_CHANGED", Bump: Patch, Wire: true, Purpose: "A body with the same KEYS, ARGV, reply, refusals and transitions keeps the contract; its SHA-1 and the bundle digest change, so it is a release.",
			match: subtree("scripts[*].body"), say: func(g *group) string { return fmt.Sprintf("script %q: body changed, contract unchanged", g.id(0)) }},
		{ID: "SNIPPET_ADDED", Bump: Patch, Purpose: "A snippet is Lua that the bodies including it render in place; by itself it is nothing on the wire, and the bodies that now include it are judged by their own rules (SCRIPT_BODY_CHANGED, SCRIPT_ADDED).",
			match: element(added, "snippets[*]"), say: sayf("snippet %q added")},
		{ID: "SNIPPET_DELETED", Bump: Patch, Purpose: "No body includes a deleted snippet any more (the validator refuses one that is included and missing); the bodies that stopped including it are judged by their own rules.",
			match: element(removed, "snippets[*]"), say: sayf("snippet %q deleted")},
		{ID: "SNIPPET_CHANGED", Bump: Patch, Wire: true, Purpose: "Every body that includes the snippet renders the new Lua in place: those scripts' SHA-1s and the bundle digest change with their contracts unchanged, as for SCRIPT_BODY_CHANGED, and the witness judges their behaviour.",
			match: subtree("snippets[*].lua"), say: sayf("snippet %q: Lua changed, and with it the body of every script that includes it")},
		{ID: "GOVERNANCE_RULES_CHANGED", Bump: Patch, Purpose: "The manifest's rules are prose for people; the classifier's rules are these.",
			match: subtree("governance.rules"), say: func(g *group) string { return "governance rules text: " + g.details() }},
		{ID: "HISTORY_NO_REWRITE", Bump: Invalid, Wire: true, Purpose: "The version history is recorded monotonically: an entry once written is never deleted, reordered or given another version or status.",
			match: subtree("governance.history"), say: func(g *group) string { return "history rewritten: " + g.details() }},
		{ID: "ORDER_CHANGED", Bump: Patch, Wire: true, Purpose: "Reordering a registry whose order carries no meaning changes the order of generated code, docs and the bundle digest only.",
			match: reordered, say: func(g *group) string {
				return fmt.Sprintf("%s reordered: %s", strings.TrimSuffix(g.root, "#order"), g.details())
			}},
	}
}

// sayf formats a message from the group's identities.
// appended reports whether the added probe step of g comes after every
// step of the old probe: its index is at least the old probe's length
// (probe steps are keyed by their index, so an insertion shifts the steps
// after it, which then show as changed and stay a changed probe).
func appended(g *group) bool {
	i, err := strconv.Atoi(g.ids[len(g.ids)-1])
	if err != nil {
		return false
	}
	steps := strings.TrimSuffix(g.root, "["+g.ids[len(g.ids)-1]+"]")
	return !g.d.old.has(steps + "[" + strconv.Itoa(i) + "]")
}

// runsNewScript reports whether the added probe step of g runs a script
// the old manifest does not have, or is appended to the same probe as a
// step that does (it plants or checks what the new script's step needs:
// an admitted job, a claim, a command that reads the result).
func runsNewScript(g *group) bool {
	if stepRunsNewScript(g.d, g.root) {
		return true
	}
	steps := strings.TrimSuffix(g.root, "["+g.ids[len(g.ids)-1]+"]")
	for i := 1; g.d.new.has(steps + "[" + strconv.Itoa(i) + "]"); i++ { // steps count from 1
		k := steps + "[" + strconv.Itoa(i) + "]"
		if !g.d.old.has(k) && stepRunsNewScript(g.d, k) {
			return true
		}
	}
	return false
}

// stepRunsNewScript reports whether the step at path step of the new
// manifest runs a script the old manifest does not have.
func stepRunsNewScript(d *differ, step string) bool {
	l, ok := d.new[step+".script"]
	if !ok || l.value == "" {
		return false
	}
	return !d.old.has("scripts["+l.value+"]") && d.new.has("scripts["+l.value+"]")
}

// stepAdded says what an added probe step runs: the new script, or what
// it is appended beside.
func stepAdded(g *group) string {
	if s := g.newValue(".script"); s != "" && stepRunsNewScript(g.d, g.root) {
		return "running the new script " + s
	}
	return "beside the appended steps that run new scripts"
}

func sayf(format string) func(g *group) string {
	return func(g *group) string {
		args := make([]any, len(g.ids))
		for i, s := range g.ids {
			args[i] = s
		}
		return fmt.Sprintf(format, args...)
	}
}

// changed formats a message from the group's identities, followed by the
// root's old and new value.
func changed(format string) func(g *group) string {
	return func(g *group) string {
		return fmt.Sprintf("%s %s → %s", sayf(format)(g), g.oldValue(""), g.newValue(""))
	}
}

// firstOf tries matchers in turn.
func firstOf(ms ...matcher) matcher {
	return func(d *differ) []*group {
		var out []*group
		for _, m := range ms {
			out = append(out, m(d)...)
		}
		return out
	}
}

// noProbe holds for an added entry without a probe.
func noProbe(g *group) bool { return !g.d.new.has(g.root + ".probe") }

// probeGone holds when the probe existed and is gone.
func probeGone(g *group) bool {
	return g.d.old.has(g.root) && !g.d.new.has(g.root)
}

// historyAdded matches history entries appended after the last one, with
// the order change their appending makes.
func historyAdded(d *differ) []*group {
	const list = "governance.history"
	oldOrder, newOrder := orderOf(d.old[list+"#order"]), orderOf(d.new[list+"#order"])
	if len(newOrder) <= len(oldOrder) || !slices.Equal(oldOrder, newOrder[:len(oldOrder)]) {
		return nil
	}
	var out []*group
	for _, v := range newOrder[len(oldOrder):] {
		g := d.collect(list+"["+escapeIdent(v)+"]", []string{v})
		if len(g.changes) == 0 {
			continue
		}
		d.claim(g)
		out = append(out, g)
	}
	for _, c := range d.open() {
		if c.path == list+"#order" && len(out) > 0 {
			out[len(out)-1].changes = append(out[len(out)-1].changes, c)
			d.claimed[c] = true
		}
	}
	return out
}

// renamed pairs a deleted entry of list p with an added one that agrees
// on the leaf same (relative to the entry): a row field of the same role,
// a wire class of the same Go name.
func renamed(p, same string) matcher {
	pt := pat(p)
	list := strings.TrimSuffix(p, "[*]")
	return func(d *differ) []*group {
		var out []*group
		for _, gone := range d.open() {
			if gone.kind != removed || gone.old.kind != elementLeaf || d.claimed[gone] {
				continue
			}
			oldIDs, ok := pt.exact(gone.path)
			if !ok {
				continue
			}
			key := d.old[gone.path+same].value
			for _, came := range d.open() {
				if came.kind != added || came.new.kind != elementLeaf || d.claimed[came] {
					continue
				}
				newIDs, ok := pt.exact(came.path)
				if !ok || d.new[came.path+same].value != key {
					continue
				}
				g := d.collect(came.path, []string{oldIDs[0], newIDs[0]})
				g.changes = append(d.collect(gone.path, nil).changes, g.changes...)
				// The anchor is the new name: the reviewer fixes it there.
				g.root = came.path
				for _, c := range d.open() {
					if c.path == list+"#order" {
						g.changes = append(g.changes, c)
					}
				}
				d.claim(g)
				out = append(out, g)
				break
			}
		}
		return out
	}
}

// docsChanged matches prose leaves of entries that exist on both sides.
func docsChanged(d *differ) []*group {
	var out []*group
	for _, c := range d.open() {
		name := c.path[strings.LastIndexAny(c.path, ".]")+1:]
		if !docNames[name] || c.kind != modified || c.old.kind != scalarLeaf || c.new.kind != scalarLeaf {
			continue
		}
		if d.new.parentAdded(c.path, d.old) || d.old.parentAdded(c.path, d.new) {
			continue
		}
		g := &group{root: c.path, changes: []*change{c}, d: d}
		d.claim(g)
		out = append(out, g)
	}
	return out
}

// idOrdering matches an alphabet or a snowflake layout that holds the same
// members in another order.
func idOrdering(d *differ) []*group {
	var out []*group
	for _, c := range d.open() {
		if c.kind != modified {
			continue
		}
		var same bool
		switch c.path {
		case "ids.body.alphabet":
			a, b := []rune(c.old.value), []rune(c.new.value)
			sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
			sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
			same = slices.Equal(a, b)
		case "ids.snowflake.layout#order":
			a, b := slices.Clone(orderOf(c.old)), slices.Clone(orderOf(c.new))
			slices.Sort(a)
			slices.Sort(b)
			same = slices.Equal(a, b)
		}
		if same {
			g := &group{root: c.path, changes: []*change{c}, d: d}
			d.claim(g)
			out = append(out, g)
		}
	}
	return out
}

// reordered matches a list that holds the same entries in another order.
func reordered(d *differ) []*group {
	var out []*group
	for _, c := range d.open() {
		if c.kind != modified || c.old.kind != orderLeaf {
			continue
		}
		g := &group{root: c.path, changes: []*change{c}, d: d}
		d.claim(g)
		out = append(out, g)
	}
	return out
}

// dutyIs holds for an added key type or row field of the given duty.
// dutyIn holds for an entry whose new duty is one of duties.
func dutyIn(duties ...string) func(*group) bool {
	return func(g *group) bool {
		for _, d := range duties {
			if g.d.new[g.root+".duty"].value == d {
				return true
			}
		}
		return false
	}
}

// hasBehind holds for a key type that names a tripwire it stands behind.
func hasBehind(g *group) bool { return g.d.new[g.root+".behind"].value != "" }

// oldLacks holds when the old side has nothing at the group's entry plus
// rel: the root is an addition under an existing entry.
func oldLacks(rel string) func(*group) bool {
	return func(g *group) bool {
		entry := strings.TrimSuffix(g.root, rel)
		return !g.d.old.has(entry + rel)
	}
}

// oldHas holds when the old side has the group's root (the entry plus
// rel): a change of an existing entry, not an addition.
func oldHas(rel string) func(*group) bool {
	return func(g *group) bool { return g.d.old.has(strings.TrimSuffix(g.root, rel) + rel) }
}

// sameLua holds for a change under a script's body when the script
// renders the same Lua on both sides.
func sameLua(g *group) bool {
	name := g.id(0)
	o, ok1 := g.d.oldLua[name]
	n, ok2 := g.d.newLua[name]
	return ok1 && ok2 && o == n
}

// noBaselineLuaChanged holds when every script of the baseline renders
// the same Lua on the new side.
func noBaselineLuaChanged(g *group) bool {
	if g.d.oldLua == nil || g.d.newLua == nil {
		return false
	}
	for name, o := range g.d.oldLua {
		if n, ok := g.d.newLua[name]; ok && n != o {
			return false
		}
	}
	return true
}

func dutyIs(duty string) func(*group) bool {
	return func(g *group) bool { return g.d.new[g.root+".duty"].value == duty }
}

// tombstoned are the elements a tombstone may name, with what it calls
// them and how to read the name from the element's identities.
var tombstoned = []struct {
	pat  pattern
	what string
	name func(ids []string) string
}{
	{pat("kinds[*]"), "kind", last},
	{pat("keys.types[*]"), "key_type", last},
	{pat("row.fields[*]"), "field", last},
	{pat("row.states[*]"), "state", last},
	{pat("sets.list[*]"), "set", last},
	{pat("reserve[*].fields[*]"), "lock", last},
	{pat("reserve[*]"), "member", last},
	{pat("classes[*]"), "class", last},
	{pat("scripts[*].reply.values[*]"), "reply_value", func(ids []string) string { return ids[0] + ":" + ids[1] }},
	{pat("scripts[*]"), "script", last},
}

func last(ids []string) string { return ids[len(ids)-1] }

// reused matches an added element whose name a tombstone of either side
// retired. The group's identities are the element's description, what
// the tombstone names, the name and the tombstone's since.
func reused(d *differ) []*group {
	var out []*group
	for _, c := range d.open() {
		if c.kind != added || c.new.kind != elementLeaf || d.claimed[c] {
			continue
		}
		for _, k := range tombstoned {
			ids, ok := k.pat.exact(c.path)
			if !ok {
				continue
			}
			name := k.name(ids)
			stone := "retired[" + escapeIdent(k.what+" "+name) + "]"
			t := d.old
			if _, in := t[stone]; !in {
				t = d.new
			}
			if _, in := t[stone]; in {
				desc, _ := describe(d.new, d.newNames, c.path)
				g := d.collect(c.path, []string{desc, strings.ReplaceAll(k.what, "_", " "), name, "since " + t[stone+".since"].value})
				d.claim(g)
				out = append(out, g)
			}
			break
		}
	}
	return out
}

// deprecation matches the deprecation marker of an element, when which
// holds for whether the old and the new side carry one; sub narrows the
// group to a leaf of the marker (".since"). The group's identity is the
// element's description.
func deprecation(which func(old, new bool) bool, sub ...string) matcher {
	return func(d *differ) []*group {
		var out []*group
		for _, c := range d.open() {
			if d.claimed[c] {
				continue
			}
			i := strings.Index(c.path, ".deprecated")
			if i < 0 || !under(c.path, c.path[:i+len(".deprecated")]) {
				continue
			}
			elem := c.path[:i]
			if _, in := d.old[elem]; !in {
				continue // the element came with its marker: its own rule tells
			}
			if _, in := d.new[elem]; !in {
				continue
			}
			root := elem + ".deprecated"
			o, n := d.old.has(root+".since"), d.new.has(root+".since")
			if !which(o, n) {
				continue
			}
			if len(sub) > 0 {
				root += sub[0]
				if c.path != root {
					continue
				}
			}
			t, tn := d.new, d.newNames
			if !n {
				t, tn = d.old, d.oldNames
			}
			desc, ok := describe(t, tn, elem)
			if !ok {
				desc = elem
			}
			g := d.collect(root, []string{desc})
			d.claim(g)
			out = append(out, g)
		}
		return out
	}
}

// newRepeated holds for an added KEYS or ARGV slot that is a repeated
// group (repeated: true).
func newRepeated(g *group) bool {
	return g.d.new[g.root+".repeated"].value == "true"
}

// argOnBothSides holds for a change of an ARGV slot's vocabulary when
// both manifests have the slot: a slot added or removed is another rule's.
func argOnBothSides(g *group) bool {
	slot := strings.TrimSuffix(g.root, ".vocabulary")
	return g.d.old.has(slot) && g.d.new.has(slot)
}

// orNone shows an absent value as "none".
func orNone(s string) string {
	if s == "" || s == `""` {
		return "none"
	}
	return s
}

// slotOnBothSides holds for a change under a KEYS or ARGV slot that both
// manifests have: a slot added or removed is another rule's.
func slotOnBothSides(g *group) bool {
	slot := strings.TrimSuffix(g.root, ".repeated")
	return g.d.old.has(slot) && g.d.new.has(slot)
}
