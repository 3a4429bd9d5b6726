package cli

import (
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/plugin"
	"github.com/echomq/echomq/gen/targets"
)

// printRequest writes the plugin request for p to stdout: for the plugin
// named name in root's emqgen.yaml (its out and options), or, when name
// is empty, for no plugin in particular (empty name and out, no options),
// which is what a plugin author feeds a plugin by hand.
func printRequest(e *env, p *model.Protocol, root, name string) int {
	var spec plugin.Spec
	if name != "" {
		specs, err := plugin.LoadConfig(root)
		if err != nil {
			e.errorf("%v", err)
			return ExitUsage
		}
		found := false
		for _, s := range specs {
			if s.Name == name {
				spec, found = s, true
			}
		}
		if !found {
			e.errorf("%s declares no plugin %q", plugin.ConfigFile, name)
			return ExitUsage
		}
	}
	in, err := targets.Input(p)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	req, err := plugin.NewRequest(in, spec.Name, spec.Out, spec.Options)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	data, err := req.Encode()
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	e.stdout.Write(data)
	return ExitOK
}

// printSchema writes the request's or the response's JSON Schema.
func printSchema(e *env, which string) int {
	switch which {
	case "request":
		e.stdout.Write(plugin.RequestSchemaJSON)
	case "response":
		e.stdout.Write(plugin.ResponseSchemaJSON)
	default:
		e.errorf("-schema takes request or response (got %q)", which)
		return ExitUsage
	}
	return ExitOK
}
