package manifest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Pos is a position in the manifest file, 1-based.
type Pos struct {
	Line, Col int
}

// IsZero reports whether the position is unknown.
func (p Pos) IsZero() bool { return p.Line == 0 }

func posOf(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// Str is a scalar string with the position it was read from. For a block
// scalar (| or >) the position is that of its content's first line, at the
// content's indentation, so that line k of a literal value sits at line
// Pos.Line+k-1.
type Str struct {
	V   string
	Pos Pos
}

// Int is a scalar integer with the position it was read from.
type Int struct {
	V   int64
	Pos Pos
	Set bool // whether the manifest gave a value
}

// Bool is a scalar boolean with the position it was read from.
type Bool struct {
	V   bool
	Pos Pos
}

// Pair is one entry of an ordered string map.
type Pair struct {
	Key   Str
	Value Str
}

// Map is a YAML mapping of strings to strings, kept in file order.
type Map []Pair

// Get returns the value for key and whether it was present.
func (m Map) Get(key string) (Str, bool) {
	for _, p := range m {
		if p.Key.V == key {
			return p.Value, true
		}
	}
	return Str{}, false
}

var (
	strType  = reflect.TypeOf(Str{})
	intType  = reflect.TypeOf(Int{})
	boolType = reflect.TypeOf(Bool{})
	mapType  = reflect.TypeOf(Map{})
	posType  = reflect.TypeOf(Pos{})
)

// decoder fills manifest structs from YAML nodes. It is strict: unknown
// fields, duplicate keys, missing required fields and scalars of the wrong
// shape are errors, and every error carries the position of the node at
// fault. It never stops at the first error.
type decoder struct {
	errs  *Errors
	lines []string // the file's lines, to place block scalars' content

	top     bool   // the next struct decoded is the manifest itself
	section string // the top-level field being decoded, "" outside one
	broken  Broken // the top-level fields with shape errors
}

// strPos is where a scalar's value is: the node itself, or for a block
// scalar the first line of its content (the node's position is that of
// the | or > indicator).
func (d *decoder) strPos(n *yaml.Node) Pos {
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 || n.Value == "" {
		return posOf(n)
	}
	for i := n.Line; i < len(d.lines); i++ {
		if text := strings.TrimLeft(d.lines[i], " "); strings.TrimSpace(text) != "" {
			return Pos{Line: n.Line + 1, Col: len(d.lines[i]) - len(text) + 1}
		}
	}
	return posOf(n)
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.errs.Add(posOf(n), fmt.Sprintf(format, args...))
	if d.section != "" && d.broken != nil {
		d.broken[d.section] = true
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("the scalar %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "an empty document"
}

// decode fills v (addressable) from n. what names the value in messages.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind == yaml.AliasNode {
		d.errorf(n, "%s: aliases are not allowed in the manifest; write the value out", what)
		return
	}
	switch v.Type() {
	case strType:
		if n.Kind != yaml.ScalarNode {
			d.errorf(n, "%s must be a string, found %s", what, kindName(n))
			return
		}
		if n.Tag == "!!null" {
			d.errorf(n, "%s must be a string, found null", what)
			return
		}
		v.Set(reflect.ValueOf(Str{V: n.Value, Pos: d.strPos(n)}))
		return
	case intType:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			d.errorf(n, "%s must be an integer, found %s", what, kindName(n))
			return
		}
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			d.errorf(n, "%s: %q is not a 64-bit integer", what, n.Value)
			return
		}
		v.Set(reflect.ValueOf(Int{V: i, Pos: posOf(n), Set: true}))
		return
	case boolType:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			d.errorf(n, "%s must be true or false, found %s", what, kindName(n))
			return
		}
		v.Set(reflect.ValueOf(Bool{V: n.Value == "true", Pos: posOf(n)}))
		return
	case mapType:
		if n.Kind != yaml.MappingNode {
			d.errorf(n, "%s must be a mapping, found %s", what, kindName(n))
			return
		}
		var m Map
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			var p Pair
			d.decode(k, reflect.ValueOf(&p.Key).Elem(), what+" key")
			d.decode(val, reflect.ValueOf(&p.Value).Elem(), what+"."+k.Value)
			if first := seen[k.Value]; first != nil {
				d.errorf(k, "%s: duplicate key %q (first at line %d)", what, k.Value, first.Line)
			} else {
				seen[k.Value] = k
			}
			m = append(m, p)
		}
		v.Set(reflect.ValueOf(m))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		p := reflect.New(v.Type().Elem())
		d.decode(n, p.Elem(), what)
		v.Set(p)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, "%s must be a sequence, found %s", what, kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, s.Index(i), what+"["+entryName(c, i)+"]")
		}
		v.Set(s)
	case reflect.Struct:
		d.decodeStruct(n, v, what)
	default:
		panic(fmt.Sprintf("manifest: no decoder for %s", v.Type()))
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, what string) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "%s must be a mapping, found %s", what, kindName(n))
		return
	}
	top := d.top
	d.top = false
	t := v.Type()
	type fieldInfo struct {
		index    int
		required bool
	}
	fields := map[string]fieldInfo{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type == posType && f.Name == "Pos" {
			v.Field(i).Set(reflect.ValueOf(posOf(n)))
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fields[name] = fieldInfo{index: i, required: opts == "required"}
		names = append(names, name)
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fi, ok := fields[k.Value]
		if !ok {
			if near := nearest(k.Value, names); near != "" {
				d.errorf(k, "%s: unknown field %q: did you mean %q? (known: %s)", what, k.Value, near, strings.Join(names, ", "))
			} else {
				d.errorf(k, "%s: unknown field %q (known: %s)", what, k.Value, strings.Join(names, ", "))
			}
			continue
		}
		if top {
			d.section = k.Value
		}
		if first := seen[k.Value]; first != nil {
			d.errorf(k, "%s: duplicate field %q (first at line %d)", what, k.Value, first.Line)
			d.section = ""
			continue
		}
		seen[k.Value] = k
		d.decode(val, v.Field(fi.index), what+"."+k.Value)
		if top {
			d.section = ""
		}
	}
	for _, name := range names {
		if fields[name].required && seen[name] == nil {
			d.errorf(n, "%s: missing required field %q", what, name)
			if top && d.broken != nil {
				d.broken[name] = true
			}
		}
	}
}

// entryKeys are the fields that name a list entry, in the order they are
// tried: a script, key, argument or field by its name, a reserve member by
// its member, a refusal by its id, a class by its word, a history entry
// by its version.
var entryKeys = []string{"name", "member", "id", "word", "version"}

// entryName names the i-th entry of a sequence in messages: by the first
// of entryKeys it holds as a plain scalar (scripts[reschedule]), else by
// its index (scripts[18]).
func entryName(n *yaml.Node, i int) string {
	if n.Kind == yaml.MappingNode {
		for _, key := range entryKeys {
			for j := 0; j+1 < len(n.Content); j += 2 {
				k, v := n.Content[j], n.Content[j+1]
				if k.Value == key && v.Kind == yaml.ScalarNode && v.Value != "" && !strings.ContainsAny(v.Value, "[]\n") {
					return v.Value
				}
			}
		}
	}
	return strconv.Itoa(i)
}

// Nearest returns the known name closest to an unknown one, when it is
// close enough to be a slip, or "" (see nearest).
func Nearest(name string, known []string) string { return nearest(name, known) }

// nearest returns the known name closest to an unknown one, when it is
// close enough to be a slip (an edit distance of at most a third of the
// name, and at least 1), or "".
func nearest(name string, known []string) string {
	best, bestD := "", max(len(name)/3, 1)+1
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
