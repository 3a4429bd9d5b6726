package gate

import (
	"fmt"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/govern/compat"
	"github.com/echomq/echomq/govern/release"
)

// guardFirst is how a body begins when its first act is the generated
// guard, which reads every declared key with a command of its type.
const guardFirst = "{{guard}}"

// tripwires proves the floor of every tripwire the new manifest adds
// (one the baseline's key type lacks): for each frozen release under root
// at or after the floor, and the baseline, every script that declares a
// key of the tripwired type must begin with the guard. A release that
// fails is a TRIPWIRE_UNPROVEN finding naming the release and its
// scripts. Releases are read as manifests, not resolved: the guard's
// place in the source is the proof.
func tripwires(root string, old, new *compat.Side) ([]compat.Finding, error) {
	had := map[string]bool{}
	for _, t := range old.Manifest.Keys.Types {
		if t.Tripwire != nil {
			had[t.Name.V] = true
		}
	}
	var added []manifest.KeyType
	for _, t := range new.Manifest.Keys.Types {
		if t.Tripwire != nil && !had[t.Name.V] {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	rs, err := release.List(root)
	if err != nil {
		return nil, err
	}
	type side struct {
		label string
		m     *manifest.Manifest
	}
	var sides []side
	seen := map[string]bool{}
	for _, r := range rs {
		m, err := manifest.Load(r.Manifest)
		if err != nil {
			return nil, fmt.Errorf("the frozen release %s: %w", r.Manifest, err)
		}
		seen[m.Version.V] = true
		sides = append(sides, side{r.Version.String(), m})
	}
	if !seen[old.Manifest.Version.V] {
		sides = append(sides, side{old.Manifest.Version.V, old.Manifest})
	}
	sides = append(sides, side{new.Manifest.Version.V + " (this change)", new.Manifest})
	var out []compat.Finding
	for _, t := range added {
		floor, err := model.ParseSemver(t.Tripwire.Floor.V)
		if err != nil {
			continue // the model refuses it, at its position
		}
		for _, s := range sides {
			v, err := model.ParseSemver(s.m.Version.V)
			if err != nil || v.Compare(floor) < 0 {
				continue
			}
			var bad []string
			for _, sc := range s.m.Scripts {
				declares := false
				for _, k := range sc.Keys {
					if k.Type.V == t.Name.V {
						declares = true
					}
				}
				if declares && !strings.HasPrefix(strings.TrimSpace(sc.Body.V), guardFirst) {
					bad = append(bad, sc.Name.V)
				}
			}
			if len(bad) > 0 {
				at := compat.Location{File: new.File, Line: t.Tripwire.Floor.Pos.Line, Column: t.Tripwire.Floor.Pos.Col}
				out = append(out, compat.UnprovenTripwire("keys.types["+t.Name.V+"].tripwire.floor", fmt.Sprintf("key type %q: tripwire floor %s, but release %s's scripts %s declare the key and do not begin with the guard: they can write before they meet the tripwire", t.Name.V, floor, s.label, strings.Join(bad, ", ")), at))
			}
		}
	}
	return out, nil
}
