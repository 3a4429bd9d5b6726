package cli

import (
	"errors"
	"fmt"
	"github.com/echomq/echomq/gen/targets"
	"os"
	"path/filepath"
	"strings"

	"github.com/echomq/echomq/gen/manifest"
	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/gen/tree"
	"github.com/echomq/echomq/govern/release"
)

func runGen(e *env, args []string) int {
	fs := e.flags("gen", "[-check] [-manifest FILE] [-root DIR] | -request [-plugin NAME] | -schema request|response",
		"Regenerates every artifact from the manifest in place: sdk/go/emq/*_gen.go, sdk/lua/, docs/protocol.md, and the files of\nthe out-of-process targets (plugins) that DIR/emqgen.yaml declares (docs/plugins.md).\nA file is written only when its bytes change; generated files the manifest no longer produces are removed.\nWith -check nothing is written: stale files are printed as unified diffs and the exit status is 1.\nWith -request the plugin request for the manifest is printed instead; -schema prints a JSON Schema of the plugin contract.")
	check := fs.Bool("check", false, "write nothing; exit 1 and print a unified diff of every stale file")
	file := fs.String("manifest", "", manifestHelp)
	root := fs.String("root", "", rootHelp("to write under (and whose emqgen.yaml declares the plugins)"))
	request := fs.Bool("request", false, "print the plugin request (emqgen.plugin.request/v1) for the manifest and exit")
	pluginName := fs.String("plugin", "", "with -request: the plugin of emqgen.yaml whose out and options the request carries")
	schema := fs.String("schema", "", "print the JSON Schema of the plugin `request` or response and exit")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		e.errorf("gen takes no arguments (got %q)", strings.Join(fs.Args(), " "))
		return ExitUsage
	}
	if *pluginName != "" && !*request {
		e.errorf("-plugin goes with -request")
		return ExitUsage
	}
	if *schema != "" {
		return printSchema(e, *schema)
	}
	if !e.locate(file, root) {
		return ExitUsage
	}
	p, code := e.load(*file)
	if p == nil {
		return code
	}
	if *request {
		return printRequest(e, p, *root, *pluginName)
	}
	ts, err := targets.Configured(*root)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	files, err := targets.Generate(p, ts)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	changes, err := tree.Compare(*root, files)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	if *check {
		for _, c := range changes {
			fmt.Fprint(e.stdout, c.Diff())
		}
		if len(changes) > 0 {
			e.errorf("%d generated file(s) are stale; run: go run ./cmd/emqgen gen", len(changes))
			return ExitFindings
		}
		fmt.Fprintf(e.stdout, "%d generated files are up to date\n", len(files))
		return ExitOK
	}
	if err := tree.Apply(*root, changes); err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	fmt.Fprintf(e.stdout, "%d generated files, %d changed\n", len(files), len(changes))
	for _, c := range changes {
		verb := "wrote"
		if c.New == nil {
			verb = "removed"
		}
		fmt.Fprintf(e.stdout, "  %s %s\n", verb, c.Path)
	}
	if len(changes) > 0 {
		fmt.Fprintln(e.stdout, nextAfterGen(*root, p))
	}
	return ExitOK
}

// nextAfterGen is what gen tells the protocol author to do after it wrote
// something: test, gate against the newest frozen release, freeze when the
// manifest's version is not frozen yet (docs/authoring.md walks through it).
func nextAfterGen(root string, p *model.Protocol) string {
	newest, err := release.Newest(root)
	switch {
	case err != nil:
		return "next: ./test.sh, then freeze the first release with: go run ./cmd/emqgen release"
	case newest.Version.Compare(p.Version) == 0:
		return fmt.Sprintf("next: ./test.sh, and go run ./cmd/emqgen check (against the frozen %s: a wire change needs a version bump and a governance.history entry; docs/authoring.md)", newest.Version)
	case newest.Version.Compare(p.Version) < 0:
		return fmt.Sprintf("next: ./test.sh, then go run ./cmd/emqgen check (%s → %s: every new script needs a probe step and a conformance scenario), then freeze %s with: go run ./cmd/emqgen release (docs/authoring.md)", newest.Version, p.Version, p.Version)
	}
	return fmt.Sprintf("next: the manifest says %s, below the newest frozen release %s: versions only grow (go run ./cmd/emqgen check says why)", p.Version, newest.Version)
}

func runValidate(e *env, args []string) int {
	fs := e.flags("validate", "[FILE]", "Checks a manifest (default: protocol.yaml in the working directory or the nearest parent directory).\nExit 0 when it is valid; exit 1 with every problem as FILE:LINE:COL: message, under it the offending line with a caret\nunder the column.")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	file := ""
	switch fs.NArg() {
	case 0:
	case 1:
		file = fs.Arg(0)
	default:
		e.errorf("validate takes at most one file")
		return ExitUsage
	}
	if !e.locate(&file, nil) {
		return ExitUsage
	}
	data, err := os.ReadFile(file)
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	p, err := model.Parse(file, data)
	var errs *manifest.Errors
	if errors.As(err, &errs) {
		fmt.Fprintln(e.stderr, errs.Excerpt(data))
		return ExitFindings
	}
	if err != nil {
		e.errorf("%v", err)
		return ExitUsage
	}
	fmt.Fprintf(e.stdout, "%s: valid (%s %s: %d scripts, %d wire classes, %d reserve members)\n", file, p.Name, p.Version, len(p.Scripts), len(p.Classes), len(p.Reserve))
	return ExitOK
}

// manifestHelp and rootHelp describe the -manifest and -root flags.
const manifestHelp = "the manifest (default: protocol.yaml in the working directory or the nearest parent directory)"

func rootHelp(what string) string {
	return "the repository root " + what + " (default: the directory of the manifest found, or . with -manifest)"
}

// locate fills in an empty *file with the manifest found by walking up
// from the working directory, and an empty *root (when root is not nil)
// with that manifest's directory, or "." when the manifest was named. It
// reports false, with a hint on stderr, when no manifest is found.
func (e *env) locate(file, root *string) bool {
	found := false
	if *file == "" {
		path, err := manifest.Find(".")
		if err != nil {
			e.errorf("%v", err)
			return false
		}
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, path); err == nil {
				path = rel
			}
		}
		*file, found = path, true
	}
	if root != nil && *root == "" {
		*root = "."
		if found {
			*root = filepath.Dir(*file)
		}
	}
	return true
}

// load reads and resolves a manifest, printing its problems. It returns
// nil and the exit status when the manifest cannot be used.
func (e *env) load(file string) (*model.Protocol, int) {
	p, err := model.Load(file)
	if err == nil {
		return p, ExitOK
	}
	var errs *manifest.Errors
	if errors.As(err, &errs) {
		fmt.Fprintln(e.stderr, errs.Error())
		return nil, ExitFindings
	}
	e.errorf("%v", err)
	return nil, ExitUsage
}
