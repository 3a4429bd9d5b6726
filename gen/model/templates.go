package model

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/echomq/echomq/gen/manifest"
)

// renderBody renders a script body template to Lua. The template functions
// resolve names against the script and the protocol; an unknown name, or a
// declared key, argument or refusal that the body never uses, is an error
// at the body's position.
func renderBody(p *Protocol, s *Script, body manifest.Str, errs *manifest.Errors) string {
	usedKeys := map[string]bool{}
	usedArgs := map[string]bool{}
	usedRefusals := map[string]bool{}
	var problems []string
	fail := func(format string, args ...any) string {
		problems = append(problems, fmt.Sprintf(format, args...))
		return "nil"
	}
	funcs := template.FuncMap{
		"key": func(name string) string {
			if _, i := s.Key(name); i > 0 {
				usedKeys[name] = true
				return "KEYS[" + strconv.Itoa(i) + "]"
			}
			return fail("{{key %q}}: script %q has no key %q (keys: %s)", name, s.Name, name, keyNames(s))
		},
		"arg": func(name string) string {
			if _, i := s.Arg(name); i > 0 {
				usedArgs[name] = true
				return "ARGV[" + strconv.Itoa(i) + "]"
			}
			return fail("{{arg %q}}: script %q has no argument %q (argv: %s)", name, s.Name, name, argNames(s))
		},
		"field": func(role string) string {
			if f, ok := p.Field(role); ok {
				return f.Name
			}
			return fail("{{field %q}}: the row has no field with role %q", role, role)
		},
		"initial": func(role string) string {
			if f, ok := p.Field(role); ok && f.Initial != "" {
				return f.Initial
			}
			return fail("{{initial %q}}: the row has no field with role %q and an initial value", role, role)
		},
		"state": func(name string) string {
			if st, ok := p.State(name); ok {
				return st.Name
			}
			return fail("{{state %q}}: %q is not a declared state", name, name)
		},
		"refuse": func(id string) string {
			if r, ok := s.Refusal(id); ok {
				usedRefusals[id] = true
				return "redis.error_reply('" + luaQuote(r.Text()) + "')"
			}
			return fail("{{refuse %q}}: script %q declares no refusal %q", id, s.Name, id)
		},
		"work":    func() string { return p.WorkKind().Name },
		"kindlen": func() int { return p.IDs.KindLength },
	}
	t, err := template.New(s.Name).Option("missingkey=error").Funcs(funcs).Parse(body.V)
	if err != nil {
		errs.Addf(bodyPos(body, err), "script %q: body template: %s", s.Name, templateMsg(err))
		return ""
	}
	var out bytes.Buffer
	if err := t.Execute(&out, nil); err != nil {
		errs.Addf(bodyPos(body, err), "script %q: body template: %s", s.Name, templateMsg(err))
		return ""
	}
	for _, msg := range problems {
		errs.Addf(body.Pos, "script %q: body: %s", s.Name, msg)
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
	return out.String()
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

// bodyPos maps a template error's line to the manifest: a block scalar's
// content starts on the line after its indicator.
func bodyPos(body manifest.Str, err error) manifest.Pos {
	m := templateLine.FindStringSubmatch(err.Error())
	if m == nil {
		return body.Pos
	}
	line, _ := strconv.Atoi(m[1])
	return manifest.Pos{Line: body.Pos.Line + line, Col: body.Pos.Col + 2}
}

func templateMsg(err error) string {
	return templateLine.ReplaceAllString(err.Error(), "")
}
