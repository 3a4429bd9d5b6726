package conformance_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/header"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/targets"
	"github.com/echomq/echomq/gen/targets/conformance"
)

func generate(t *testing.T) map[string]conformance.File {
	t.Helper()
	p, err := model.Load("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := targets.Input(p)
	if err != nil {
		t.Fatal(err)
	}
	files, err := conformance.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := conformance.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]conformance.File{}
	for i, f := range files {
		if !bytes.Equal(f.Data, again[i].Data) {
			t.Errorf("%s differs between two runs", f.Path)
		}
		if err := header.Check(f.Path, f.Data); err != nil {
			t.Error(err)
		}
		var vf conformance.File
		if err := json.Unmarshal(f.Data, &vf); err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		out[strings.TrimPrefix(f.Path, conformance.Dir+"/")] = vf
	}
	return out
}

// The vectors hold every id example and invalid example of the manifest,
// the seeded random ids, and every refusal of every script; each random
// id's expected facts re-parse to its text with the reference parser.
func TestVectors(t *testing.T) {
	p, err := model.Load("../../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := generate(t)
	byName := map[string]conformance.Case{}
	for _, f := range files {
		for _, c := range f.Cases {
			byName[c.Name] = c
		}
	}
	for _, ex := range p.IDs.Examples {
		found := false
		for _, c := range files["ids.json"].Cases {
			if c.Op == "parse_id" && c.Args["text"] == ex.ID && c.Result != nil {
				found = true
			}
		}
		if !found {
			t.Errorf("no parse_id case for the example %s", ex.ID)
		}
	}
	for _, bad := range p.IDs.Invalid {
		found := false
		for _, c := range files["ids.json"].Cases {
			if c.Op == "parse_id" && c.Args["text"] == bad && c.Error != nil && c.Error.Kind == "id" {
				found = true
			}
		}
		if !found {
			t.Errorf("no refused parse_id case for the invalid example %q", bad)
		}
	}
	random := 0
	for _, c := range files["ids.json"].Cases {
		if !strings.HasPrefix(c.Name, "parse_id/random/") {
			continue
		}
		random++
		d, err := p.IDs.ParseID(c.Args["text"].(string))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if d.Time.UnixMilli() != int64(c.Result["time_ms"].(float64)) || d.Node != int64(c.Result["node"].(float64)) || d.Sequence != int64(c.Result["sequence"].(float64)) {
			t.Fatalf("%s: facts %v, the reference parses %+v", c.Name, c.Result, d)
		}
	}
	if random != conformance.RandomIDs {
		t.Errorf("%d random ids, want %d", random, conformance.RandomIDs)
	}
	for _, s := range p.Scripts {
		for _, r := range s.Refusals {
			c, ok := byName["classify_error/refusal/"+s.Name+"/"+r.ID]
			if !ok || c.Result["class"] != r.Class || c.Result["message"] != r.Message {
				t.Errorf("refusal %s.%s: case %+v", s.Name, r.ID, c)
			}
		}
	}
	for _, q := range p.Queues.Invalid {
		found := false
		for _, c := range files["keys.json"].Cases {
			if c.Args["queue"] == q && c.Error != nil && c.Error.Kind == "queue_name" {
				found = true
			}
		}
		if !found {
			t.Errorf("no refused queue_keys case for the invalid queue %q", q)
		}
	}
}
