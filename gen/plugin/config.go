package plugin

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/echomq/echomq/gen/manifest"
)

// ConfigFile is the file, at the repository root, that declares the
// out-of-process targets.
const ConfigFile = "emqgen.yaml"

// ConfigVersion is the only version of ConfigFile this host reads.
const ConfigVersion = 1

// nameRE is what a plugin's name looks like.
var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)

// LoadConfig reads root/emqgen.yaml and returns its plugins in the order
// they are declared, each with Dir set to root. A missing file declares no
// plugins. Problems are reported as a *manifest.Errors, one
// file:line:col: message each.
//
// The file's form:
//
//	version: 1
//	plugins:
//	  - name: python                              # the target's name
//	    run: [python3, gen/plugins/python/main.py] # relative to the root
//	    out: sdk/python                            # where its files go
//	    timeout: 2m                                # optional, default 5m
//	    options: {package: echomq}                 # optional, passed as is
func LoadConfig(root string) ([]Spec, error) {
	file := filepath.Join(root, ConfigFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseConfig(ConfigFile, data, root)
}

// ParseConfig parses the text of an emqgen.yaml named file (for
// positions), setting each plugin's Dir to root.
func ParseConfig(file string, data []byte, root string) ([]Spec, error) {
	errs := &manifest.Errors{File: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		errs.Add(manifest.Pos{}, err.Error())
		return nil, errs.Err()
	}
	if len(doc.Content) == 0 {
		errs.Add(manifest.Pos{}, "empty file: give version: 1 and plugins")
		return nil, errs.Err()
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		errs.Add(pos(top), "the file must be a mapping with version and plugins")
		return nil, errs.Err()
	}
	var specs []Spec
	sawVersion := false
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		switch k.Value {
		case "version":
			sawVersion = true
			var n int
			if v.Decode(&n) != nil || n != ConfigVersion {
				errs.Addf(pos(v), "version must be %d", ConfigVersion)
			}
		case "plugins":
			if v.Kind != yaml.SequenceNode {
				errs.Add(pos(v), "plugins must be a list")
				continue
			}
			names := map[string]bool{}
			for _, item := range v.Content {
				s, ok := parseSpec(item, errs)
				if !ok {
					continue
				}
				if names[s.Name] {
					errs.Addf(pos(item), "plugin %q is declared twice", s.Name)
				}
				names[s.Name] = true
				s.Dir = root
				specs = append(specs, s)
			}
		default:
			errs.Addf(pos(k), "unknown field %q (fields: version, plugins)", k.Value)
		}
	}
	if !sawVersion {
		errs.Addf(pos(top), "missing field version (version: %d)", ConfigVersion)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return specs, nil
}

func parseSpec(n *yaml.Node, errs *manifest.Errors) (Spec, bool) {
	var s Spec
	if n.Kind != yaml.MappingNode {
		errs.Add(pos(n), "a plugin must be a mapping with name, run and out")
		return s, false
	}
	ok := true
	fail := func(at *yaml.Node, format string, args ...any) {
		errs.Addf(pos(at), format, args...)
		ok = false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		seen[k.Value] = true
		switch k.Value {
		case "name":
			if v.Kind != yaml.ScalarNode || !nameRE.MatchString(v.Value) {
				fail(v, "plugin name must match %s", nameRE)
			}
			s.Name = v.Value
		case "run":
			if v.Decode(&s.Run) != nil || len(s.Run) == 0 || s.Run[0] == "" {
				fail(v, "run must be a non-empty list of strings: the program and its arguments")
			}
		case "out":
			s.Out = v.Value
			if err := CheckOut(v.Value); v.Kind != yaml.ScalarNode || err != nil {
				fail(v, "%v", err)
			}
		case "timeout":
			d, err := time.ParseDuration(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || d <= 0 {
				fail(v, "timeout must be a positive duration such as 90s or 2m")
			}
			s.Timeout = d
		case "options":
			var o map[string]any
			if v.Kind != yaml.MappingNode || v.Decode(&o) != nil {
				fail(v, "options must be a mapping")
				break
			}
			// Options travel as JSON: refuse what JSON cannot carry
			// (mappings with non-string keys).
			if _, err := json.Marshal(o); err != nil {
				fail(v, "options must be JSON values: %v", err)
				break
			}
			s.Options = o
		default:
			fail(k, "unknown field %q (fields: name, run, out, timeout, options)", k.Value)
		}
	}
	for _, f := range []string{"name", "run", "out"} {
		if !seen[f] {
			fail(n, "plugin: missing field %s", f)
		}
	}
	return s, ok
}

func pos(n *yaml.Node) manifest.Pos { return manifest.Pos{Line: n.Line, Col: n.Column} }
