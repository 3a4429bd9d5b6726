package model

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/echomq/echomq/gen/manifest"
)

// renderBody renders a script body template to Lua and returns the names
// of the snippets it includes. The template functions resolve names
// against the script and the protocol; an unknown name, or a declared key,
// argument or refusal that the body never uses, is an error at the body's
// position. A snippet ({{template "<name>"}}) is rendered in place, its
// names resolved against the including script.
func renderBody(p *Protocol, s *Script, body manifest.Str, errs *manifest.Errors) (string, []string) {
	usedKeys := map[string]bool{}
	usedArgs := map[string]bool{}
	usedRefusals := map[string]bool{}
	// problems are reported once per unknown name, at its first use.
	type problem struct{ fn, name, msg string }
	var problems []problem
	fail := func(fn, name, format string, args ...any) string {
		for _, p := range problems {
			if p.fn == fn && p.name == name {
				return "nil"
			}
		}
		problems = append(problems, problem{fn, name, fmt.Sprintf(format, args...)})
		return "nil"
	}
	funcs := template.FuncMap{
		"key": func(name string) string {
			if k, i := s.Key(name); i > 0 {
				usedKeys[name] = true
				if k.Repeated {
					return fail("key", name, "{{key %q}}: key %q of script %q is a repeated group; address it with {{keys_from %q}}, the index of its first key", name, name, s.Name, name)
				}
				return "KEYS[" + strconv.Itoa(i) + "]"
			}
			return fail("key", name, "{{key %q}}: script %q has no key %q (keys: %s)", name, s.Name, name, keyNames(s))
		},
		// at is where the members of a key with a tripwire are in this
		// call's layout: KEYS[i] of the key itself in a script that does
		// not declare the key its members move to, else the local the
		// guard sets (<key>_at), which is the moved-to key while the
		// tripwire is in place.
		"at": func(name string) string {
			_, i, j, ok := tripwired(p, s, name)
			if !ok {
				return fail("at", name, "{{at %q}}: key %q of script %q is not of a key type with a tripwire", name, name, s.Name)
			}
			usedKeys[name] = true
			if j == 0 {
				return "KEYS[" + strconv.Itoa(i) + "]"
			}
			usedKeys[s.Keys[j-1].Name] = true
			return name + "_at"
		},
		// aware holds in a script that declares both a key with a
		// tripwire and the key its members move to: the guard then sets
		// <key>_at and <key>_tripped, and the body serves both layouts.
		"aware": func(name string) bool {
			_, _, j, ok := tripwired(p, s, name)
			return ok && j > 0
		},
		// declares holds in a script that declares a key of the named
		// key type, so that a snippet shared by scripts of several minors
		// renders for each what it honours (policy_gate's minor).
		"declares": func(typ string) bool {
			for _, k := range s.Keys {
				if k.Type == typ {
					return true
				}
			}
			return false
		},
		// keys_from is the Lua index of the first key of a repeated
		// group: KEYS[{{keys_from "rows"}} + i - 1] is the row of the
		// i-th id of the repeated argument group.
		"keys_from": func(name string) string {
			if k, i := s.Key(name); i > 0 {
				usedKeys[name] = true
				if !k.Repeated {
					return fail("keys_from", name, "{{keys_from %q}}: key %q of script %q is one key, not a repeated group; address it with {{key %q}}", name, name, s.Name, name)
				}
				return strconv.Itoa(i)
			}
			return fail("keys_from", name, "{{keys_from %q}}: script %q has no key %q (keys: %s)", name, s.Name, name, keyNames(s))
		},
		"arg": func(name string) string {
			if a, i := s.Arg(name); i > 0 {
				usedArgs[name] = true
				if a.Repeated {
					return fail("arg", name, "{{arg %q}}: argument %q of script %q is a repeated group; address it with {{args_from %q}}, the index of its first value", name, name, s.Name, name)
				}
				return "ARGV[" + strconv.Itoa(i) + "]"
			}
			return fail("arg", name, "{{arg %q}}: script %q has no argument %q (argv: %s)", name, s.Name, name, argNames(s))
		},
		// min and max are an int argument's bounds as Lua numbers, so a
		// body refuses a value outside the bounds the SDKs check:
		// {{min "concurrency"}}, {{max "rate_limit"}}.
		"min": func(name string) string { return bound(s, name, "min", fail) },
		"max": func(name string) string { return bound(s, name, "max", fail) },
		// args_from is the Lua index of the first value of a repeated
		// argument group: ARGV[{{args_from "ids"}} + i - 1] is its i-th.
		"args_from": func(name string) string {
			if a, i := s.Arg(name); i > 0 {
				usedArgs[name] = true
				if !a.Repeated {
					return fail("args_from", name, "{{args_from %q}}: argument %q of script %q is one value, not a repeated group; address it with {{arg %q}}", name, name, s.Name, name)
				}
				return strconv.Itoa(i)
			}
			return fail("args_from", name, "{{args_from %q}}: script %q has no argument %q (argv: %s)", name, s.Name, name, argNames(s))
		},
		// args_width is how many ARGV one record of the repeated argument
		// group takes: ARGV[{{args_from "payloads"}} + (i - 1) * {{args_width}}]
		// is the i-th record's payload.
		"args_width": func() string {
			g, j := s.RepeatedArgs()
			if j == 0 {
				return fail("args_width", "", "{{args_width}}: script %q has no repeated argument group", s.Name)
			}
			return strconv.Itoa(len(g))
		},
		"field": func(role string) string {
			if f, ok := p.Field(role); ok {
				return f.Name
			}
			return fail("field", role, "{{field %q}}: the row has no field with role %q", role, role)
		},
		"initial": func(role string) string {
			if f, ok := p.Field(role); ok && f.Initial != "" {
				return f.Initial
			}
			return fail("initial", role, "{{initial %q}}: the row has no field with role %q and an initial value", role, role)
		},
		"state": func(name string) string {
			if st, ok := p.State(name); ok {
				return st.Name
			}
			return fail("state", name, "{{state %q}}: %q is not a declared state", name, name)
		},
		"refuse": func(id string) string {
			if r, ok := s.Refusal(id); ok {
				usedRefusals[id] = true
				return "redis.error_reply('" + luaQuote(r.Text()) + "')"
			}
			return fail("refuse", id, "{{refuse %q}}: script %q declares no refusal %q", id, s.Name, id)
		},
		// word is a word of a vocabulary, bare: '{{word "failure_class" "lease_lost"}}'
		// is the Lua string 'lease_lost'.
		"word": func(vocabulary, word string) string {
			v, ok := p.Vocabulary(vocabulary)
			if !ok {
				return fail("word", vocabulary+"\x00"+word, "{{word %q %q}}: vocabulary %q is not declared%s", vocabulary, word, vocabulary, vocabularyHint(p, vocabulary))
			}
			if !v.Has(word) {
				return fail("word", vocabulary+"\x00"+word, "{{word %q %q}}: %q is not a word of vocabulary %q (words: %s)", vocabulary, word, word, vocabulary, strings.Join(wordList(v), ", "))
			}
			return word
		},
		// vocabulary is the set of a vocabulary's words as a Lua table
		// constructor, {['error'] = true, ...} in manifest order, so that a
		// script can refuse an argument outside it.
		"vocabulary": func(vocabulary string) string {
			v, ok := p.Vocabulary(vocabulary)
			if !ok {
				return fail("vocabulary", vocabulary, "{{vocabulary %q}}: vocabulary %q is not declared%s", vocabulary, vocabulary, vocabularyHint(p, vocabulary))
			}
			var parts []string
			for _, w := range v.Words {
				parts = append(parts, "['"+luaQuote(w.Word)+"'] = true")
			}
			return "{" + strings.Join(parts, ", ") + "}"
		},
		"work":    func() string { return p.WorkKind().Name },
		"kindlen": func() int { return p.IDs.KindLength },
		// guard reads every KEYS slot with an O(1) command of its declared
		// redis type, so that a key of another type (planted by a foreign
		// writer) fails the script with WRONGTYPE before anything is
		// written: Redis does not roll a failed script back.
		"guard": func() string {
			var parts []string
			moved := map[int]bool{}
			for _, k := range s.Keys {
				if t, i, j, ok := tripwired(p, s, k.Name); ok && j > 0 {
					// The key's probe says the layout: it answers for
					// the key's own type (or none), the classic one; a
					// refusal is the tripwire's value when the key's
					// type is the tripwire's, which moves the members to
					// KEYS[j], probed in its place.
					moved[j-1] = true
					w, mt := t.Tripwire, ""
					if to, ok := p.KeyType(t.Tripwire.MovesTo); ok {
						mt = typeProbe[to.Redis]
					}
					// The classic layout costs the 2.6 guard's one probe:
					// only when it fails is the key's type asked.
					parts = append(parts, fmt.Sprintf("local %[1]s_at, %[1]s_tripped = KEYS[%[2]d], false; if type(redis.pcall('%[6]s', KEYS[%[2]d])) == 'table' then if redis.call('TYPE', KEYS[%[2]d])['ok'] ~= '%[3]s' then return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value') end; %[1]s_at, %[1]s_tripped = KEYS[%[4]d], true; redis.call('%[5]s', KEYS[%[4]d]) end",
						k.Name, i, w.Redis, j, mt, typeProbe[t.Redis]))
				}
			}
			for i, k := range s.Keys {
				if moved[i] {
					continue
				}
				if t, ok := p.KeyType(k.Type); ok && t.Tripwire != nil {
					if _, _, j, _ := tripwired(p, s, k.Name); j > 0 {
						continue
					}
				}
				redis := ""
				if k.Type == "reserve" {
					if m, ok := p.Member(k.Member); ok {
						redis = m.Redis
					}
				} else if t, ok := p.KeyType(k.Type); ok {
					redis = t.Redis
				}
				cmd := typeProbe[redis]
				switch {
				case cmd == "":
				case k.Repeated:
					// One key per value of the repeated argument group,
					// each probed like a single key.
					if g, j := s.RepeatedArgs(); len(g) == 1 {
						parts = append(parts, fmt.Sprintf("if #KEYS - %d ~= #ARGV - %d then return redis.error_reply('ERR %s: one key per %s') end", i, j-1, luaQuote(k.Name), luaQuote(s.Argv[j-1].Name)))
					} else if j > 0 {
						parts = append(parts, fmt.Sprintf("if (#ARGV - %d) %% %d ~= 0 or #KEYS - %d ~= (#ARGV - %d) / %d then return redis.error_reply('ERR %s: one key per entry of %s') end", j-1, len(g), i, j-1, len(g), luaQuote(k.Name), luaQuote(recordNames(g))))
					}
					parts = append(parts, fmt.Sprintf("for i = %d, #KEYS do redis.call('%s', KEYS[i]) end", i+1, cmd))
				default:
					parts = append(parts, "redis.call('"+cmd+"', KEYS["+strconv.Itoa(i+1)+"])")
				}
			}
			return strings.Join(parts, "; ") + " -- each key's type, before any write"
		},
	}
	t := template.New(s.Name).Option("missingkey=error").Funcs(funcs)
	known := map[string]bool{}
	for i, sn := range p.Snippets {
		known[sn.Name] = true
		if _, err := t.New(sn.Name).Parse(sn.Lua); err != nil {
			if p.brokenSnippets == nil {
				p.brokenSnippets = map[string]bool{}
			}
			if !p.brokenSnippets[sn.Name] {
				p.brokenSnippets[sn.Name] = true
				pos := body.Pos
				if p.Source != nil && i < len(p.Source.Snippets) {
					pos = bodyPos(p.Source.Snippets[i].Lua, err)
				}
				errs.Addf(pos, "snippet %q: template: %s", sn.Name, templateMsg(err))
			}
			return "", nil
		}
	}
	if _, err := t.Parse(body.V); err != nil {
		errs.Addf(bodyPos(body, err), "script %q: body template: %s", s.Name, templateMsg(err))
		return "", nil
	}
	var used []string
	if t.Tree != nil {
		for _, in := range includes(t.Tree.Root) {
			if !known[in.Name] {
				var names []string
				for _, sn := range p.Snippets {
					names = append(names, sn.Name)
				}
				errs.Addf(offsetPos(body, int(in.Pos)), "script %q: body: {{template %q}}: no snippet %q is declared%s", s.Name, in.Name, in.Name, knownHint(in.Name, names))
				return "", nil
			}
			used = append(used, in.Name)
		}
		// A snippet may include snippets: those are the body's too.
		seen := map[string]bool{}
		for _, n := range used {
			seen[n] = true
		}
		for i := 0; i < len(used); i++ {
			st := t.Lookup(used[i])
			if st == nil || st.Tree == nil {
				continue
			}
			for _, in := range includes(st.Tree.Root) {
				if known[in.Name] && !seen[in.Name] {
					seen[in.Name] = true
					used = append(used, in.Name)
				}
			}
		}
	}
	var out bytes.Buffer
	if err := t.Execute(&out, nil); err != nil {
		errs.Addf(bodyPos(body, err), "script %q: body template: %s", s.Name, templateMsg(err))
		return "", used
	}
	for _, pr := range problems {
		pos := body.Pos
		if at, ok := findCall(t.Tree.Root, pr.fn, pr.name); ok {
			pos = offsetPos(body, int(at))
		}
		errs.Addf(pos, "script %q: body: %s", s.Name, pr.msg)
	}
	for _, k := range s.Keys {
		if !usedKeys[k.Name] {
			errs.Addf(body.Pos, "script %q: key %q is declared but the body never uses it", s.Name, k.Name)
		}
	}
	for _, a := range s.Argv {
		if !usedArgs[a.Name] {
			errs.Addf(body.Pos, "script %q: argument %q is declared but the body never uses it", s.Name, a.Name)
		}
	}
	for _, r := range s.Refusals {
		if !usedRefusals[r.ID] {
			errs.Addf(body.Pos, "script %q: refusal %q is declared but the body never issues it", s.Name, r.ID)
		}
	}
	return out.String(), used
}

// includes lists the templates (snippets) a body includes, in order.
func includes(n parse.Node) []*parse.TemplateNode {
	var out []*parse.TemplateNode
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.TemplateNode:
			out = append(out, n)
		case *parse.IfNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.List)
			walk(n.ElseList)
		}
	}
	walk(n)
	return out
}

func vocabularyHint(p *Protocol, name string) string {
	var known []string
	for _, v := range p.Vocabularies {
		known = append(known, v.Name)
	}
	return knownHint(name, known)
}

func wordList(v Vocabulary) []string {
	var w []string
	for _, x := range v.Words {
		w = append(w, x.Word)
	}
	return w
}

// typeProbe is the O(1) read that fails with WRONGTYPE on a key of another
// redis type.
var typeProbe = map[string]string{"zset": "ZCARD", "list": "LLEN", "hash": "HLEN", "string": "STRLEN", "set": "SCARD", "stream": "XLEN"}

func recordNames(g []Arg) string {
	var n []string
	for _, a := range g {
		n = append(n, a.Name)
	}
	return "(" + strings.Join(n, ", ") + ")"
}

func keyNames(s *Script) string {
	var n []string
	for _, k := range s.Keys {
		n = append(n, k.Name)
	}
	return strings.Join(n, ", ")
}

func argNames(s *Script) string {
	var n []string
	for _, a := range s.Argv {
		n = append(n, a.Name)
	}
	return strings.Join(n, ", ")
}

// luaQuote escapes s for a single-quoted Lua string.
func luaQuote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`).Replace(s)
}

var templateLine = regexp.MustCompile(`^template: [^:]*:(\d+):(?:(\d+):)? ?`)

// bodyPos maps a template error's line (and column, when the error has
// one) to the manifest. body.Pos is where the body's first line starts
// (for a block scalar, its content's first line and indentation).
func bodyPos(body manifest.Str, err error) manifest.Pos {
	m := templateLine.FindStringSubmatch(err.Error())
	if m == nil {
		return body.Pos
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2]) // 0-based byte offset in the line; 0 when absent
	return manifest.Pos{Line: body.Pos.Line + line - 1, Col: body.Pos.Col + col}
}

// offsetPos is the manifest position of byte offset off of the body.
func offsetPos(body manifest.Str, off int) manifest.Pos {
	before := body.V[:min(off, len(body.V))]
	line := strings.Count(before, "\n")
	col := len(before) - (strings.LastIndexByte(before, '\n') + 1)
	return manifest.Pos{Line: body.Pos.Line + line, Col: body.Pos.Col + col}
}

// findCall returns the offset of the first call {{fn "name"}} in the
// template tree.
func findCall(n parse.Node, fn, name string) (parse.Pos, bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return 0, false
		}
		for _, c := range n.Nodes {
			if at, ok := findCall(c, fn, name); ok {
				return at, true
			}
		}
	case *parse.ActionNode:
		return findCall(n.Pipe, fn, name)
	case *parse.PipeNode:
		if n == nil {
			return 0, false
		}
		for _, c := range n.Cmds {
			if at, ok := findCall(c, fn, name); ok {
				return at, true
			}
		}
	case *parse.CommandNode:
		// A call of several string arguments is found by their texts
		// joined with NUL ({{word "v" "w"}} as "v\x00w").
		if id, ok := firstIdent(n); ok && len(n.Args) >= 2 && id.Ident == fn {
			var texts []string
			for _, a := range n.Args[1:] {
				if str, ok := a.(*parse.StringNode); ok {
					texts = append(texts, str.Text)
				}
			}
			if len(texts) == len(n.Args)-1 && strings.Join(texts, "\x00") == name {
				return id.Position(), true
			}
		}
		for _, a := range n.Args {
			if at, ok := findCall(a, fn, name); ok {
				return at, true
			}
		}
	case *parse.IfNode:
		return findCallBranch(&n.BranchNode, fn, name)
	case *parse.RangeNode:
		return findCallBranch(&n.BranchNode, fn, name)
	case *parse.WithNode:
		return findCallBranch(&n.BranchNode, fn, name)
	case *parse.TemplateNode:
		return findCall(n.Pipe, fn, name)
	}
	return 0, false
}

func firstIdent(n *parse.CommandNode) (*parse.IdentifierNode, bool) {
	if len(n.Args) == 0 {
		return nil, false
	}
	id, ok := n.Args[0].(*parse.IdentifierNode)
	return id, ok
}

func findCallBranch(b *parse.BranchNode, fn, name string) (parse.Pos, bool) {
	for _, n := range []parse.Node{b.Pipe, b.List, b.ElseList} {
		if at, ok := findCall(n, fn, name); ok {
			return at, true
		}
	}
	return 0, false
}

func templateMsg(err error) string {
	return templateLine.ReplaceAllString(err.Error(), "")
}

// tripwired finds the script's key name, of a key type with a tripwire:
// its type, its 1-based KEYS index, and the index of the script's key of
// the type its members move to (0 when the script declares none).
func tripwired(p *Protocol, s *Script, name string) (KeyType, int, int, bool) {
	k, i := s.Key(name)
	if i == 0 || k.Repeated {
		return KeyType{}, 0, 0, false
	}
	t, ok := p.KeyType(k.Type)
	if !ok || t.Tripwire == nil {
		return KeyType{}, 0, 0, false
	}
	for j, o := range s.Keys {
		if o.Type == t.Tripwire.MovesTo && !o.Repeated {
			return t, i, j + 1, true
		}
	}
	return t, i, 0, true
}

// bound is {{min "name"}} or {{max "name"}}: the bound of script s's int
// argument, or a problem when the argument or its bound is missing.
func bound(s *Script, name, which string, fail func(fn, name, format string, args ...any) string) string {
	a, i := s.Arg(name)
	if i == 0 {
		return fail(which, name, "{{%s %q}}: script %q has no argument %q (argv: %s)", which, name, s.Name, name, argNames(s))
	}
	b := a.Min
	if which == "max" {
		b = a.Max
	}
	if b == nil {
		return fail(which, name, "{{%s %q}}: argument %q of script %q declares no %s", which, name, name, s.Name, which)
	}
	return strconv.FormatInt(*b, 10)
}
