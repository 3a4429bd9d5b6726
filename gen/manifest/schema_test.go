package manifest

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestSchemaMatchesDecoder walks protocol.schema.json alongside the
// Manifest struct: every yaml field must be a schema property of the right
// JSON type and vice versa, required lists must match the ",required" tags,
// every object must refuse unknown properties (the decoder is strict), and
// every property must carry a description for editors to show.
func TestSchemaMatchesDecoder(t *testing.T) {
	data, err := os.ReadFile("../../protocol.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("protocol.schema.json: %v", err)
	}
	if got, want := root["$schema"], "https://json-schema.org/draft/2020-12/schema"; got != want {
		t.Errorf("$schema = %v, want %s", got, want)
	}
	w := &schemaWalker{t: t, root: root}
	w.walk("manifest", reflect.TypeOf(Manifest{}), root)
	if w.objects == 0 {
		t.Fatal("the walk checked no objects")
	}
}

type schemaWalker struct {
	t       *testing.T
	root    map[string]any
	objects int
}

// resolve follows a local $ref ("#/$defs/name"); a schema without one is
// returned as is.
func (w *schemaWalker) resolve(path string, s map[string]any) map[string]any {
	ref, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		w.t.Errorf("%s: $ref %q is not a local #/$defs/ reference", path, ref)
		return nil
	}
	defs, _ := w.root["$defs"].(map[string]any)
	def, ok := defs[name].(map[string]any)
	if !ok {
		w.t.Errorf("%s: $ref %q names no definition", path, ref)
		return nil
	}
	return def
}

func (w *schemaWalker) wantType(path string, s map[string]any, want string) bool {
	if got := s["type"]; got != want {
		w.t.Errorf("%s: schema type is %v, want %q", path, got, want)
		return false
	}
	return true
}

func (w *schemaWalker) walk(path string, typ reflect.Type, schema map[string]any) {
	s := w.resolve(path, schema)
	if s == nil {
		return
	}
	switch typ {
	case strType:
		w.wantType(path, s, "string")
		return
	case intType:
		w.wantType(path, s, "integer")
		return
	case boolType:
		w.wantType(path, s, "boolean")
		return
	case mapType:
		if w.wantType(path, s, "object") {
			ap, ok := s["additionalProperties"].(map[string]any)
			if !ok || ap["type"] != "string" {
				w.t.Errorf("%s: a string map's additionalProperties must be {\"type\": \"string\"}, got %v", path, s["additionalProperties"])
			}
		}
		return
	}
	switch typ.Kind() {
	case reflect.Pointer:
		w.walk(path, typ.Elem(), s)
	case reflect.Slice:
		if !w.wantType(path, s, "array") {
			return
		}
		items, ok := s["items"].(map[string]any)
		if !ok {
			w.t.Errorf("%s: array without items", path)
			return
		}
		w.walk(path+"[]", typ.Elem(), items)
	case reflect.Struct:
		w.walkStruct(path, typ, s)
	default:
		w.t.Errorf("%s: no schema rule for Go type %s", path, typ)
	}
}

func (w *schemaWalker) walkStruct(path string, typ reflect.Type, s map[string]any) {
	w.objects++
	if !w.wantType(path, s, "object") {
		return
	}
	if s["additionalProperties"] != false {
		w.t.Errorf("%s: additionalProperties must be false (the decoder refuses unknown fields)", path)
	}
	props, _ := s["properties"].(map[string]any)
	fields := map[string]reflect.StructField{}
	var names, required []string
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "" || tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fields[name] = f
		names = append(names, name)
		if opts == "required" {
			required = append(required, name)
		}
	}
	for _, name := range names {
		p, ok := props[name].(map[string]any)
		if !ok {
			w.t.Errorf("%s: yaml field %q (%s.%s) is missing from the schema's properties", path, name, typ.Name(), fields[name].Name)
			continue
		}
		if d, _ := p["description"].(string); strings.TrimSpace(d) == "" {
			w.t.Errorf("%s.%s: property has no description", path, name)
		}
		w.walk(path+"."+name, fields[name].Type, p)
	}
	var extra []string
	for name := range props {
		if _, ok := fields[name]; !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		w.t.Errorf("%s: the schema lists property %q, which %s has no yaml field for", path, name, typ.Name())
	}
	var got []string
	if list, ok := s["required"].([]any); ok {
		for _, r := range list {
			name, _ := r.(string)
			got = append(got, name)
		}
	} else if s["required"] != nil {
		w.t.Errorf("%s: required is not a list", path)
	}
	sort.Strings(got)
	sort.Strings(required)
	if strings.Join(got, ",") != strings.Join(required, ",") {
		w.t.Errorf("%s: schema requires [%s], the decoder requires [%s]", path, strings.Join(got, ", "), strings.Join(required, ", "))
	}
}

// TestSchemaExpectOneOf checks that the schema's "exactly one check" rule
// for expect lists every check field of Expect: all but element.
func TestSchemaExpectOneOf(t *testing.T) {
	data, err := os.ReadFile("../../protocol.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Defs map[string]struct {
			OneOf []struct {
				Required []string `json:"required"`
			} `json:"oneOf"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, alt := range root.Defs["expect"].OneOf {
		if len(alt.Required) != 1 {
			t.Errorf("expect.oneOf: each alternative requires one check, got %v", alt.Required)
		}
		got = append(got, alt.Required...)
	}
	var want []string
	typ := reflect.TypeOf(Expect{})
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "element" {
			want = append(want, name)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("expect.oneOf lists [%s], Expect's checks are [%s]", strings.Join(got, ", "), strings.Join(want, ", "))
	}
}
