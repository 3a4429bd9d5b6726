package plugin_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/bundle"
	"github.com/echomq/echomq/gen/cases"
	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/plugin"
	"github.com/echomq/echomq/gen/target"
)

// input loads a manifest and renders its bundle.
func input(t *testing.T, file string) *target.Input {
	t.Helper()
	p, err := model.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Render(p)
	if err != nil {
		t.Fatal(err)
	}
	return &target.Input{Protocol: p, Bundle: b}
}

// manifests are the real manifests requests are checked on: the current
// one and every frozen release.
func manifests(t *testing.T) []string {
	files, err := filepath.Glob("../../golden/releases/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../protocol.yaml"}, files...)
}

func encode(t *testing.T, in *target.Input, opts map[string]any) []byte {
	t.Helper()
	r, err := plugin.NewRequest(in, "echo", "sdk/echo", opts)
	if err != nil {
		t.Fatal(err)
	}
	data, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestRequestMatchesSchema validates the request of every real manifest
// against request.schema.json with a JSON Schema validator.
func TestRequestMatchesSchema(t *testing.T) {
	for _, file := range manifests(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data := encode(t, input(t, file), map[string]any{"package": "echomq", "nested": map[string]any{"n": 1}})
			if err := plugin.ValidateRequest(data); err != nil {
				t.Fatalf("the request of %s does not match request.schema.json:\n%v", file, err)
			}
		})
	}
}

// TestGoldenCasesMatchSchema validates the request of every valid golden
// case (golden/cases): small manifests that leave parts empty or take
// each feature to its edge.
func TestGoldenCasesMatchSchema(t *testing.T) {
	cs, err := cases.List("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range cs {
		if c.Invalid() {
			continue
		}
		p, err := model.Parse("protocol.yaml", c.Manifest)
		if err != nil {
			t.Fatalf("case %s: %v", c.Name, err)
		}
		b, err := bundle.Render(p)
		if err != nil {
			t.Fatalf("case %s: %v", c.Name, err)
		}
		if err := plugin.ValidateRequest(encode(t, &target.Input{Protocol: p, Bundle: b}, nil)); err != nil {
			t.Errorf("case %s: the request does not match request.schema.json:\n%v", c.Name, err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no valid golden case")
	}
}

// TestSchemaRefusesDrift shows the schema can fail: an unknown field, a
// missing field, a wrong version and a wrong type are refused.
func TestSchemaRefusesDrift(t *testing.T) {
	data := encode(t, input(t, "../../protocol.yaml"), nil)
	edits := map[string]func(m map[string]any){
		"unknown top-level field": func(m map[string]any) { m["extra"] = true },
		"missing bundle":          func(m map[string]any) { delete(m, "bundle") },
		"other version":           func(m map[string]any) { m["schema"] = "emqgen.plugin.request/v2" },
		"unknown protocol field":  func(m map[string]any) { m["protocol"].(map[string]any)["positions"] = []any{} },
		"version as a string":     func(m map[string]any) { m["protocol"].(map[string]any)["version"] = "2.1.1" },
		"script without keys": func(m map[string]any) {
			delete(m["protocol"].(map[string]any)["scripts"].([]any)[0].(map[string]any), "keys")
		},
		"part with lit and hole": func(m map[string]any) {
			kc := m["protocol"].(map[string]any)["key_classes"].([]any)[0].(map[string]any)
			kc["parts"] = []any{map[string]any{"lit": "x", "hole": "queue"}}
		},
	}
	for name, edit := range edits {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		bad, _ := json.Marshal(m)
		if err := plugin.ValidateRequest(bad); err == nil {
			t.Errorf("%s: the schema accepted it", name)
		}
	}
}

// TestSchemaMatchesTypes walks request.schema.json alongside the Request
// type: every JSON field of every struct is a property of its schema
// object and every property is a field, so that the schema and the DTO
// cannot drift apart even in parts a manifest leaves empty.
func TestSchemaMatchesTypes(t *testing.T) {
	var root map[string]any
	if err := json.Unmarshal(plugin.RequestSchemaJSON, &root); err != nil {
		t.Fatal(err)
	}
	w := &walker{t: t, defs: root["$defs"].(map[string]any)}
	w.walk("request", reflect.TypeOf(plugin.Request{}), root)
	if w.objects < 30 {
		t.Fatalf("the walk checked %d objects; want every one of the request's types", w.objects)
	}
	var resp map[string]any
	if err := json.Unmarshal(plugin.ResponseSchemaJSON, &resp); err != nil {
		t.Fatal(err)
	}
	w.walk("response", reflect.TypeOf(plugin.Response{}), resp)
}

type walker struct {
	t       *testing.T
	defs    map[string]any
	objects int
}

func (w *walker) resolve(s map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		return w.defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
	}
	return s
}

func (w *walker) walk(path string, typ reflect.Type, s map[string]any) {
	s = w.resolve(s)
	switch typ.Kind() {
	case reflect.Slice:
		items, ok := s["items"].(map[string]any)
		if s["type"] != "array" || !ok {
			w.t.Errorf("%s: a Go slice, but the schema is not an array with items", path)
			return
		}
		w.walk(path+"[]", typ.Elem(), items)
	case reflect.Pointer:
		// An optional object: null, or the object itself.
		alts, ok := s["oneOf"].([]any)
		if !ok || len(alts) != 2 || w.resolve(alts[0].(map[string]any))["type"] != "null" {
			w.t.Errorf("%s: a Go pointer, but the schema is not oneOf null and the object", path)
			return
		}
		w.walk(path, typ.Elem(), w.resolve(alts[1].(map[string]any)))
	case reflect.Struct:
		props := map[string]any{}
		if alts, ok := s["oneOf"].([]any); ok {
			for _, a := range alts {
				for k, v := range w.resolve(a.(map[string]any))["properties"].(map[string]any) {
					props[k] = v
				}
			}
		} else {
			if s["type"] != "object" || s["additionalProperties"] != false {
				w.t.Errorf("%s: a Go struct, but the schema is not an object refusing unknown properties", path)
			}
			props, _ = s["properties"].(map[string]any)
		}
		w.objects++
		var fields []string
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields = append(fields, name)
			ps, ok := props[name].(map[string]any)
			if !ok {
				w.t.Errorf("%s: field %s (json %q) is not a schema property", path, f.Name, name)
				continue
			}
			if _, ok := ps["description"]; !ok {
				w.t.Errorf("%s.%s: the property has no description", path, name)
			}
			w.walk(path+"."+name, f.Type, ps)
		}
		sort.Strings(fields)
		for k := range props {
			if i := sort.SearchStrings(fields, k); i == len(fields) || fields[i] != k {
				w.t.Errorf("%s: schema property %q is no field of %s", path, k, typ)
			}
		}
	case reflect.Map:
		if s["type"] != "object" {
			w.t.Errorf("%s: a Go map, but the schema is not an object", path)
		}
	case reflect.String:
		if s["type"] != "string" && s["const"] == nil && s["enum"] == nil {
			w.t.Errorf("%s: a Go string, but the schema type is %v", path, s["type"])
		}
	case reflect.Int, reflect.Int64:
		if s["type"] != "integer" {
			w.t.Errorf("%s: a Go integer, but the schema type is %v", path, s["type"])
		}
	case reflect.Bool:
		if s["type"] != "boolean" {
			w.t.Errorf("%s: a Go bool, but the schema type is %v", path, s["type"])
		}
	default:
		w.t.Errorf("%s: unexpected Go type %s", path, typ)
	}
}

// TestRequestCarriesTheModel checks that the request says what the model
// and the bundle say, including the derived values targets use.
func TestRequestCarriesTheModel(t *testing.T) {
	in := input(t, "../../protocol.yaml")
	p, b := in.Protocol, in.Bundle
	r, err := plugin.NewRequest(in, "echo", "sdk/echo", map[string]any{"k": "v"})
	if err != nil {
		t.Fatal(err)
	}
	pr := r.Protocol
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", what, got, want)
		}
	}
	check("schema", r.Schema, plugin.RequestSchema)
	check("header marker", r.Emqgen.Header.Marker, header.Marker)
	check("plugin", r.Plugin, plugin.PluginInfo{Name: "echo", Out: "sdk/echo"})
	check("options", r.Options, map[string]any{"k": "v"})
	check("name", pr.Name, p.Name)
	check("version", pr.Version.Text, p.Version.String())
	check("version record", pr.VersionRecord, p.VersionRecord())
	check("work kind", pr.WorkKind, p.WorkKind().Name)
	check("epoch ms", pr.IDs.EpochMS, p.IDs.Epoch.UnixMilli())
	check("queue max length", pr.Queues.MaxLength, p.Queues.MaxLength)
	check("digest", r.Bundle.Digest, b.Digest)
	check("scripts", len(pr.Scripts), len(p.Scripts))
	check("bundle scripts", len(r.Bundle.Scripts), len(b.Scripts))
	for i, s := range p.Scripts {
		rs := pr.Scripts[i]
		check(s.Name+" name", rs.Name, s.Name)
		check(s.Name+" body", rs.Body, s.Body)
		check(s.Name+" bundle source", r.Bundle.Scripts[i].Source, b.Scripts[i].Source)
		check(s.Name+" bundle sha1", r.Bundle.Scripts[i].SHA1, b.Scripts[i].SHA1)
		check(s.Name+" keys", len(rs.Keys), len(s.Keys))
		for j, k := range s.Keys {
			check(s.Name+" key shape", rs.Keys[j].Shape, p.KeyShape(k))
		}
		check(s.Name+" argv", len(rs.Argv), len(s.Argv))
		for j, f := range s.Refusals {
			check(s.Name+" refusal text", rs.Refusals[j].Text, f.Text())
		}
		check(s.Name+" reply lines", rs.Reply.Lines, s.ReplyLines())
	}
	for i, m := range p.Reserve {
		check(m.Name+" shape", pr.Reserve[i].Shape, p.MemberShape(m))
		check(m.Name+" ident", pr.Reserve[i].Ident, m.Ident())
		check(m.Name+" parts", shape(pr.Reserve[i].Parts), p.MemberShape(m))
		check(m.Name+" probe steps", len(pr.Reserve[i].Probe.Steps), len(m.Probe.Steps))
	}
	for i, kt := range p.KeyTypes {
		check(kt.Name+" shape", pr.KeyTypes[i].Shape, p.TypeShape(kt.Name))
		check(kt.Name+" parts", shape(pr.KeyTypes[i].Parts), p.TypeShape(kt.Name))
	}
	for i, c := range p.Classes {
		check(c.Word+" issued by", pr.Classes[i].IssuedBy, c.IssuedBy)
	}
	for i, e := range p.IDs.Examples {
		d, _ := p.IDs.ParseID(e.ID)
		check(e.ID+" time ms", pr.IDs.Examples[i].TimeMS, d.Time.UnixMilli())
		check(e.ID+" kind", pr.IDs.Examples[i].Kind, d.Kind)
	}
	check("states", len(pr.Row.States), len(p.Row.States))
	check("history", len(pr.Governance.History), len(p.Governance.History))
}

func shape(parts []plugin.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Hole != "" {
			b.WriteString("<" + p.Hole + ">")
		} else {
			b.WriteString(p.Lit)
		}
	}
	return b.String()
}

// TestRequestDeterministic encodes the same input twice, and a second
// load of the manifest once more, and compares byte for byte.
func TestRequestDeterministic(t *testing.T) {
	opts := map[string]any{"z": 1, "a": []any{"x", map[string]any{"q": true, "b": nil}}}
	one := encode(t, input(t, "../../protocol.yaml"), opts)
	two := encode(t, input(t, "../../protocol.yaml"), opts)
	if !bytes.Equal(one, two) {
		t.Fatal("two encodings of the same manifest differ")
	}
	if !bytes.HasSuffix(one, []byte("}\n")) {
		t.Errorf("the request does not end in a newline")
	}
}
