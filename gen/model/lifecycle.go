package model

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
)

// lifecycle resolves what the manifest says about the life of its names:
// deprecation markers, writer duties and the tombstones of retired names.
// A deprecation's version and a tombstone's are at most the manifest's
// version; a duty is every-writer or hint; a tombstone names a kind of
// name that exists, once, and no live element carries a retired name.
func (r *resolver) lifecycle() {
	m := r.m
	for _, k := range m.Kinds {
		setDep(r, k.Deprecated, func(d *Deprecation) {
			forName(r.p.Kinds, func(x *Kind) bool { return x.Name == k.Name.V }, func(x *Kind) { x.Deprecated = d })
		})
	}
	for _, t := range m.Keys.Types {
		duty := r.duty(t.Duty, DutyHint)
		forName(r.p.KeyTypes, func(x *KeyType) bool { return x.Name == t.Name.V }, func(x *KeyType) { x.Duty = duty })
		setDep(r, t.Deprecated, func(d *Deprecation) {
			forName(r.p.KeyTypes, func(x *KeyType) bool { return x.Name == t.Name.V }, func(x *KeyType) { x.Deprecated = d })
		})
	}
	for _, f := range m.Row.Fields {
		duty := r.duty(f.Duty, DutyEveryWriter)
		forName(r.p.Row.Fields, func(x *Field) bool { return x.Name == f.Name.V }, func(x *Field) { x.Duty = duty })
		setDep(r, f.Deprecated, func(d *Deprecation) {
			forName(r.p.Row.Fields, func(x *Field) bool { return x.Name == f.Name.V }, func(x *Field) { x.Deprecated = d })
		})
	}
	for _, s := range m.Row.States {
		setDep(r, s.Deprecated, func(d *Deprecation) {
			forName(r.p.Row.States, func(x *State) bool { return x.Name == s.Name.V }, func(x *State) { x.Deprecated = d })
		})
	}
	for _, s := range m.Sets.List {
		setDep(r, s.Deprecated, func(d *Deprecation) {
			forName(r.p.Sets, func(x *Set) bool { return x.Key == s.Key.V }, func(x *Set) { x.Deprecated = d })
		})
	}
	for _, mb := range m.Reserve {
		setDep(r, mb.Deprecated, func(d *Deprecation) {
			forName(r.p.Reserve, func(x *Member) bool { return x.Name == mb.Member.V }, func(x *Member) { x.Deprecated = d })
		})
		for _, f := range mb.Fields {
			setDep(r, f.Deprecated, func(d *Deprecation) {
				forName(r.p.Reserve, func(x *Member) bool { return x.Name == mb.Member.V }, func(x *Member) {
					forName(x.Fields, func(y *MemberField) bool { return y.Name == f.Name.V }, func(y *MemberField) { y.Deprecated = d })
				})
			})
		}
	}
	for _, c := range m.Classes {
		setDep(r, c.Deprecated, func(d *Deprecation) {
			forName(r.p.Classes, func(x *Class) bool { return x.Word == c.Word.V }, func(x *Class) { x.Deprecated = d })
		})
	}
	for _, s := range m.Scripts {
		setDep(r, s.Deprecated, func(d *Deprecation) {
			forName(r.p.Scripts, func(x *Script) bool { return x.Name == s.Name.V }, func(x *Script) { x.Deprecated = d })
		})
		for _, v := range s.Reply.Values {
			setDep(r, v.Deprecated, func(d *Deprecation) {
				forName(r.p.Scripts, func(x *Script) bool { return x.Name == s.Name.V }, func(x *Script) {
					forName(x.Reply.Values, func(y *ReplyValue) bool { return y.Value == v.Value.V }, func(y *ReplyValue) { y.Deprecated = d })
				})
			})
		}
	}
	r.retired()
}

// forName applies set to the elements of list that match.
func forName[T any](list []T, match func(*T) bool, set func(*T)) {
	for i := range list {
		if match(&list[i]) {
			set(&list[i])
		}
	}
}

// duty reads a writer duty, def when it is not given.
func (r *resolver) duty(s manifest.Str, def string) string {
	switch s.V {
	case "":
		return def
	case DutyEveryWriter, DutyHint:
		return s.V
	case DutyEveryClaimer, DutyEveryCompleter:
		if def == DutyHint {
			return s.V
		}
		r.errf(s.Pos, "duty %q is a policy's, for a key type; a row field's duty is %s or %s", s.V, DutyEveryWriter, DutyHint)
		return def
	}
	r.errf(s.Pos, "duty %q is not one of %s, %s, %s, %s", s.V, DutyEveryWriter, DutyEveryClaimer, DutyEveryCompleter, DutyHint)
	return def
}

// version reads a lifecycle version, at most the manifest's own.
func (r *resolver) version(s manifest.Str, what string) (Semver, bool) {
	v, err := ParseSemver(s.V)
	if err != nil {
		r.errf(s.Pos, "%s: %v", what, err)
		return Semver{}, false
	}
	if own, err := ParseSemver(r.m.Version.V); err == nil && v.Compare(own) > 0 {
		r.errf(s.Pos, "%s %s is after the manifest's version %s", what, v, own)
		return Semver{}, false
	}
	return v, true
}

func setDep(r *resolver, d *manifest.Deprecation, set func(*Deprecation)) {
	if d == nil {
		return
	}
	if v, ok := r.version(d.Since, "deprecated since"); ok {
		set(&Deprecation{Since: v, Reason: d.Reason.V})
	}
}

// live lists the names the manifest uses, by tombstone kind.
func (r *resolver) live() map[string]map[string]manifest.Pos {
	out := map[string]map[string]manifest.Pos{}
	add := func(what string, s manifest.Str) {
		if out[what] == nil {
			out[what] = map[string]manifest.Pos{}
		}
		out[what][s.V] = s.Pos
	}
	m := r.m
	for _, k := range m.Kinds {
		add("kind", k.Name)
	}
	for _, t := range m.Keys.Types {
		add("key_type", t.Name)
	}
	for _, f := range m.Row.Fields {
		add("field", f.Name)
	}
	for _, s := range m.Row.States {
		add("state", s.Name)
	}
	for _, s := range m.Sets.List {
		add("set", s.Key)
	}
	for _, mb := range m.Reserve {
		add("member", mb.Member)
		for _, f := range mb.Fields {
			add("lock", f.Name)
		}
	}
	for _, c := range m.Classes {
		add("class", c.Word)
	}
	for _, s := range m.Scripts {
		add("script", s.Name)
		for _, v := range s.Reply.Values {
			add("reply_value", manifest.Str{V: s.Name.V + ":" + strconv.FormatInt(v.Value.V, 10), Pos: v.Value.Pos})
		}
	}
	return out
}

func (r *resolver) retired() {
	live := r.live()
	seen := map[string]manifest.Pos{}
	for _, t := range r.m.Retired {
		if !contains(TombstoneKinds, t.What.V) {
			r.errf(t.What.Pos, "retired: what %q is not one of %s", t.What.V, strings.Join(TombstoneKinds, ", "))
			continue
		}
		key := t.What.V + " " + t.Name.V
		if p, dup := seen[key]; dup {
			r.errf(t.Name.Pos, "retired: %s %q is retired twice (first at line %d)", t.What.V, t.Name.V, p.Line)
			continue
		}
		seen[key] = t.Name.Pos
		if t.Name.V == "" {
			r.errf(t.Name.Pos, "retired: a tombstone names no name")
			continue
		}
		if t.What.V == "reply_value" {
			script, val, ok := strings.Cut(t.Name.V, ":")
			if _, err := strconv.ParseInt(val, 10, 64); !ok || script == "" || err != nil {
				r.errf(t.Name.Pos, "retired: reply value %q is not <script>:<integer>", t.Name.V)
				continue
			}
		}
		if p, ok := live[t.What.V][t.Name.V]; ok {
			r.errf(p, "%s %q is retired (tombstone at line %d): a retired name never returns, with this meaning or another; choose another name", strings.ReplaceAll(t.What.V, "_", " "), t.Name.V, t.Pos.Line)
		}
		v, ok := r.version(t.Since, fmt.Sprintf("retired %s %q: since", t.What.V, t.Name.V))
		if !ok {
			continue
		}
		r.p.Retired = append(r.p.Retired, Tombstone{What: t.What.V, Name: t.Name.V, Since: v, Meaning: t.Meaning.V})
	}
}

// tripwire resolves a key type's tripwire and what stands behind one: a
// tripwire's value is of another redis type than the key type's, its
// members move to a key type of the same class and redis type, and its
// floor is a release at most the manifest's; a key type with a policy's
// duty (every-claimer, every-completer) names, as behind, a key type with
// a tripwire, since no frozen script honours what came after it.
func (r *resolver) tripwire(t manifest.KeyType, duty string) {
	if w := t.Tripwire; w != nil {
		tw := &Tripwire{Redis: w.Redis.V, MovesTo: w.MovesTo.V, Summary: w.Summary.V}
		if !redisTypes[w.Redis.V] || w.Redis.V == t.Redis.V {
			r.errf(w.Redis.Pos, "key type %q: tripwire redis type %q must be one of string, hash, zset, set, list, stream and not the key type's own (%s)", t.Name.V, w.Redis.V, t.Redis.V)
		}
		if to, ok := r.p.KeyType(w.MovesTo.V); !ok || to.Class != t.Class.V || to.Redis != t.Redis.V || to.Name == t.Name.V {
			r.errf(w.MovesTo.Pos, "key type %q: tripwire moves_to %q must name another key type of class %s and redis type %s", t.Name.V, w.MovesTo.V, t.Class.V, t.Redis.V)
		}
		if v, ok := r.version(w.Floor, "key type "+strconv.Quote(t.Name.V)+": tripwire floor"); ok {
			tw.Floor = v
		}
		forName(r.p.KeyTypes, func(x *KeyType) bool { return x.Name == t.Name.V }, func(x *KeyType) { x.Tripwire = tw })
	}
	if t.Behind.V != "" {
		ok := false
		for _, o := range r.m.Keys.Types {
			if o.Name.V == t.Behind.V && o.Tripwire != nil {
				ok = true
			}
		}
		if !ok {
			r.errf(t.Behind.Pos, "key type %q: behind %q must name a key type with a tripwire", t.Name.V, t.Behind.V)
		}
		forName(r.p.KeyTypes, func(x *KeyType) bool { return x.Name == t.Name.V }, func(x *KeyType) { x.Behind = t.Behind.V })
	} else if duty == DutyEveryClaimer || duty == DutyEveryCompleter {
		r.errf(t.Duty.Pos, "key type %q: duty %s binds the scripts of every release, and a frozen script honours nothing added after it: declare behind, the key type whose tripwire refuses them", t.Name.V, duty)
	}
}
