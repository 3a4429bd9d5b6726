package runner

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/echomq/echomq/gen/model"
)

// facts is what placeholders resolve from: the manifest and the bundle
// digest, shared by every scenario.
type facts struct {
	p      *model.Protocol
	bundle string
}

// env is one scenario's placeholder state: its queue, the ids minted for
// its variables, its saved results and the server clock.
type env struct {
	*facts
	queue string
	ids   map[string]string
	next  uint64 // the next runner-minted snowflake time
	saved map[string]any
	now   func() (int64, error)
}

func newEnv(f *facts, queue string, now func() (int64, error)) *env {
	return &env{facts: f, queue: queue, ids: map[string]string{}, saved: map[string]any{}, now: now, next: 1}
}

var placeholderRE = regexp.MustCompile(`\$\{([^{}]*)\}`)

// resolve replaces every placeholder in v (strings, and the keys of
// objects). A string that is exactly one placeholder takes the
// placeholder's own type.
func (e *env) resolve(v any) (any, error) {
	switch x := v.(type) {
	case string:
		return e.resolveString(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // mint variables in a stable order
		for _, k := range keys {
			rk, err := e.resolveString(k)
			if err != nil {
				return nil, err
			}
			ks, ok := rk.(string)
			if !ok {
				ks = fmt.Sprint(rk)
			}
			rv, err := e.resolve(x[k])
			if err != nil {
				return nil, err
			}
			out[ks] = rv
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i := range x {
			r, err := e.resolve(x[i])
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

func (e *env) resolveString(s string) (any, error) {
	locs := placeholderRE.FindAllStringSubmatchIndex(s, -1)
	if len(locs) == 0 {
		return s, nil
	}
	if len(locs) == 1 && locs[0][0] == 0 && locs[0][1] == len(s) {
		return e.value(s[locs[0][2]:locs[0][3]])
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		b.WriteString(s[last:l[0]])
		v, err := e.value(s[l[2]:l[3]])
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case string:
			b.WriteString(x)
		default:
			b.WriteString(show(x))
		}
		last = l[1]
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// value resolves one placeholder's body (the text between ${ and }).
func (e *env) value(body string) (any, error) {
	p := e.p
	name, arg, hasArg := strings.Cut(body, ":")
	switch name {
	case "queue":
		if !hasArg {
			return e.queue, nil
		}
		return arg, nil
	case "job", "other":
		if !hasArg || arg == "" {
			return nil, fmt.Errorf("${%s} needs a variable: ${%s:v}", body, name)
		}
		return e.id(name, arg)
	case "example":
		idx, field, _ := strings.Cut(arg, ":")
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= len(p.IDs.Examples) {
			return nil, fmt.Errorf("${%s}: the manifest has %d id examples", body, len(p.IDs.Examples))
		}
		ex := p.IDs.Examples[i]
		switch field {
		case "":
			return ex.ID, nil
		case "kind":
			return ex.ID[:p.IDs.KindLength], nil
		case "time_ms":
			return ex.Time.UnixMilli(), nil
		case "node":
			return ex.Node, nil
		case "sequence":
			return ex.Sequence, nil
		}
		return nil, fmt.Errorf("${%s}: want ${example:i} or ${example:i:kind|time_ms|node|sequence}", body)
	case "key":
		typ, queue, _ := strings.Cut(arg, "@")
		if queue == "" {
			queue = e.queue
		}
		t, ok := p.KeyType(typ)
		if !ok {
			return nil, fmt.Errorf("${%s}: the manifest has no key type %q", body, typ)
		}
		c, _ := p.KeyClass(t.Class)
		if len(c.Parts) == 0 || !hasHole(c.Parts, "type") {
			return nil, fmt.Errorf("${%s}: key type %q is not a per-queue type", body, typ)
		}
		return model.Shape(c.Parts, map[string]string{"queue": queue, "type": t.Name}), nil
	case "row":
		v, queue, _ := strings.Cut(arg, "@")
		if queue == "" {
			queue = e.queue
		}
		id, err := e.idOf(v)
		if err != nil {
			return nil, fmt.Errorf("${%s}: %w", body, err)
		}
		t, _ := p.KeyType(p.Row.Key)
		c, _ := p.KeyClass(t.Class)
		return model.Shape(c.Parts, map[string]string{"queue": queue, "id": id}), nil
	case "reserve":
		m, ok := p.Member(arg)
		if !ok {
			return nil, fmt.Errorf("${%s}: the manifest has no reserve member %q", body, arg)
		}
		c, _ := p.KeyClass("reserve")
		return model.Shape(c.Parts, map[string]string{"member": model.Shape(m.Parts, map[string]string{"queue": e.queue})}), nil
	case "field":
		f, ok := p.Field(arg)
		if !ok {
			return nil, fmt.Errorf("${%s}: the row has no field with role %q", body, arg)
		}
		return f.Name, nil
	case "initial":
		f, ok := p.Field(arg)
		if !ok {
			return nil, fmt.Errorf("${%s}: the row has no field with role %q", body, arg)
		}
		return f.Initial, nil
	case "token":
		if arg != "initial" {
			return nil, fmt.Errorf("${%s}: want ${token:initial}", body)
		}
		f, ok := p.Field(model.RoleToken)
		if !ok {
			return nil, fmt.Errorf("${%s}: the row has no token field", body)
		}
		n, err := strconv.ParseInt(f.Initial, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("${%s}: the token's initial value %q is not an integer", body, f.Initial)
		}
		return n, nil
	case "state":
		s, ok := p.State(arg)
		if !ok {
			return nil, fmt.Errorf("${%s}: the manifest has no state %q", body, arg)
		}
		return s.Name, nil
	case "set":
		for _, s := range p.Sets {
			if s.Key == arg {
				return s.Key, nil
			}
		}
		return nil, fmt.Errorf("${%s}: the manifest has no set %q", body, arg)
	case "class":
		for _, c := range p.Classes {
			if c.Name == arg {
				return c.Word, nil
			}
		}
		return nil, fmt.Errorf("${%s}: the manifest has no wire class named %q", body, arg)
	case "refusal":
		script, id, _ := strings.Cut(arg, ".")
		s, ok := p.Script(script)
		if !ok {
			return nil, fmt.Errorf("${%s}: the manifest has no script %q", body, script)
		}
		r, ok := s.Refusal(id)
		if !ok {
			return nil, fmt.Errorf("${%s}: script %s has no refusal %q", body, script, id)
		}
		return r.Message, nil
	case "kind":
		switch arg {
		case "work":
			return p.WorkKind().Name, nil
		case "other":
			k, err := e.otherKind()
			return k, err
		}
		return nil, fmt.Errorf("${%s}: want ${kind:work} or ${kind:other}", body)
	case "version":
		v := p.Version
		record := func(v model.Semver) string {
			return strings.Replace(p.VersionRecord(), p.Version.String(), v.String(), 1)
		}
		switch arg {
		case "":
			if hasArg {
				break
			}
			return p.VersionRecord(), nil
		case "lower":
			switch {
			case v.Minor > 0:
				v.Minor, v.Patch = v.Minor-1, 0
			case v.Patch > 0:
				v.Patch--
			default:
				// x.0.0 is the lowest version of its major: the lowest
				// record a keyspace of this major can hold is its own
				// (there is no lower one to raise), so a scenario of a
				// lower minor, replayed on a new major by the witness,
				// still asks something of this version's fence.
			}
			return record(v), nil
		case "higher":
			v.Minor, v.Patch = v.Minor+1, 0
			return record(v), nil
		case "major":
			v.Major, v.Minor, v.Patch = v.Major+1, 0, 0
			return record(v), nil
		case "padded-major", "padded-patch", "padded-lower", "huge-minor", "huge-major":
			// Odd records every client must judge as the fence script
			// does (echomq 2.2.1): a leading zero makes a part
			// non-canonical, so the record is refused; a canonical part
			// too long for a machine integer is larger than any.
			parts := [3]string{strconv.Itoa(v.Major), strconv.Itoa(v.Minor), strconv.Itoa(v.Patch)}
			huge := "1" + strings.Repeat("0", 30)
			switch arg {
			case "padded-major":
				parts[0] = "0" + parts[0]
			case "padded-patch":
				parts[2] = "0" + parts[2]
			case "padded-lower":
				switch {
				case v.Minor > 0:
					parts[1], parts[2] = strconv.Itoa(v.Minor-1), "00"
				case v.Patch > 0:
					parts[2] = "0" + strconv.Itoa(v.Patch-1)
				default:
					// x.0.0 has no lower version (as ${version:lower}):
					// its own record with a padded patch, refused alike.
					parts[2] = "00"
				}
			case "huge-minor":
				parts[1] = huge
			case "huge-major":
				parts[0] = huge
			}
			return strings.Replace(p.VersionRecord(), p.Version.String(), strings.Join(parts[:], "."), 1), nil
		case "prior-major":
			if v.Major == 0 {
				return nil, fmt.Errorf("${%s}: version %s has no prior major", body, p.Version)
			}
			v.Major, v.Minor, v.Patch = v.Major-1, 0, 0
			return record(v), nil
		}
		return nil, fmt.Errorf("${%s}: want ${version}, ${version:lower}, ${version:higher}, ${version:major}, ${version:prior-major}, ${version:padded-major}, ${version:padded-patch}, ${version:padded-lower}, ${version:huge-minor} or ${version:huge-major}", body)
	case "semver":
		return p.Version.String(), nil
	case "bundle":
		return e.bundle, nil
	case "probes":
		n := 0
		for _, m := range p.Reserve {
			n += len(m.Probe.Steps)
		}
		for _, c := range p.Classes {
			n += len(c.Probe.Steps)
		}
		return int64(n), nil
	case "now":
		now, err := e.now()
		if err != nil {
			return nil, fmt.Errorf("${%s}: reading the server's clock: %w", body, err)
		}
		if !hasArg {
			return now, nil
		}
		d, err := strconv.ParseInt(strings.TrimPrefix(arg, "+"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("${%s}: want ${now:+ms} or ${now:-ms}", body)
		}
		return now + d, nil
	}
	// A saved result: name.path.to.field.
	if head, path, ok := strings.Cut(body, "."); ok {
		v, present := e.saved[head]
		if !present {
			return nil, fmt.Errorf("${%s}: no step saved %q", body, head)
		}
		for _, part := range strings.Split(path, ".") {
			switch x := v.(type) {
			case map[string]any:
				if v, ok = x[part]; !ok {
					return nil, fmt.Errorf("${%s}: the saved result has no %q", body, part)
				}
			case []any:
				i, err := strconv.Atoi(part)
				if err != nil || i < 0 || i >= len(x) {
					return nil, fmt.Errorf("${%s}: index %q out of range", body, part)
				}
				v = x[i]
			default:
				return nil, fmt.Errorf("${%s}: %q is not an object", body, part)
			}
		}
		return v, nil
	}
	return nil, fmt.Errorf("unknown placeholder ${%s}", body)
}

func hasHole(parts []model.Part, hole string) bool {
	for _, p := range parts {
		if p.Hole == hole {
			return true
		}
	}
	return false
}

// otherKind is the first registered kind that is not the work kind.
func (e *env) otherKind() (string, error) {
	for _, k := range e.p.Kinds {
		if !k.Work {
			return k.Name, nil
		}
	}
	return "", fmt.Errorf("the manifest registers no kind besides the work kind")
}

// idOf returns the id a row placeholder names: a variable (a work-kind id
// minted for a new one), job:v or other:v as in ${job:v} and ${other:v},
// example:i, or a saved result's field holding an id.
func (e *env) idOf(v string) (string, error) {
	if which, name, ok := strings.Cut(v, ":"); ok && (which == "job" || which == "other") {
		return e.id(which, name)
	}
	if id, ok := e.ids[v]; ok {
		return id, nil
	}
	if strings.HasPrefix(v, "example:") || strings.Contains(v, ".") {
		x, err := e.value(v)
		if err != nil {
			return "", err
		}
		s, ok := x.(string)
		if !ok {
			return "", fmt.Errorf("%s is not an id", v)
		}
		return s, nil
	}
	return e.id("job", v)
}

// id mints (once per variable) an id for v: of the work kind for job,
// of another registered kind for other. Ids are minted in order of first
// use, so that their byte order, and mint order, is first-use order.
func (e *env) id(which, v string) (string, error) {
	if id, ok := e.ids[v]; ok {
		return id, nil
	}
	kind := e.p.WorkKind().Name
	if which == "other" {
		k, err := e.otherKind()
		if err != nil {
			return "", err
		}
		kind = k
	}
	tb, ok := e.p.IDs.Bitfield("time")
	if !ok {
		return "", fmt.Errorf("the id layout has no time field")
	}
	// A millisecond apart, from a fixed instant: deterministic and ordered.
	const base = uint64(1) << 30
	id := e.p.IDs.FormatID(kind, (base+e.next)<<tb.Shift)
	e.next++
	e.ids[v] = id
	return id, nil
}
