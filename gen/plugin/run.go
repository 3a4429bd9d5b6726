package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/echomq/echomq/gen/target"
)

// DefaultTimeout bounds one run of a plugin that declares no timeout.
const DefaultTimeout = 5 * time.Minute

// Spec declares one out-of-process target, as emqgen.yaml does.
type Spec struct {
	// Name is the target's name; it must not be the name of another target.
	Name string
	// Run is the command: the program and its arguments. A program
	// without a slash is looked up in PATH; a relative one is relative to
	// Dir.
	Run []string
	// Out is the directory, relative to the repository root, that the
	// plugin's files are written under.
	Out string
	// Options are passed to the plugin as the request's "options".
	Options map[string]any
	// Timeout bounds one run; zero means DefaultTimeout.
	Timeout time.Duration
	// Dir is the working directory of the process, the repository root.
	Dir string
}

// Target returns the target that runs the plugin s describes.
func Target(s Spec) target.Target { return processTarget{s} }

type processTarget struct{ s Spec }

func (t processTarget) Name() string { return t.s.Name }

// Generate builds the request from in, runs the plugin with it on its
// standard input and returns the files of its response, their paths
// joined under the out directory. A plugin that cannot be started, exits
// non-zero or runs past its timeout, a response that does not match
// response.schema.json, a response that reports errors, and a path that
// is not relative, clean and inside the out directory are errors naming
// the plugin and carrying its standard error. Headers are not checked
// here: the host checks every target's files alike (targets.Run).
func (t processTarget) Generate(in *target.Input) ([]target.File, error) {
	s := t.s
	if err := CheckOut(s.Out); err != nil {
		return nil, fmt.Errorf("plugin %s: %w", s.Name, err)
	}
	if len(s.Run) == 0 || s.Run[0] == "" {
		return nil, fmt.Errorf("plugin %s: no command to run", s.Name)
	}
	req, err := NewRequest(in, s.Name, s.Out, s.Options)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", s.Name, err)
	}
	data, err := req.Encode()
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", s.Name, err)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Run[0], s.Run[1:]...)
	cmd.Dir = s.Dir
	cmd.Stdin = bytes.NewReader(data)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	ownGroup(cmd)
	// Children that escaped the group may hold the pipes open after the
	// plugin is killed; stop waiting for them soon after.
	cmd.WaitDelay = 5 * time.Second
	command := strings.Join(s.Run, " ")
	if err := cmd.Run(); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		return nil, fmt.Errorf("plugin %s: %s: %w%s", s.Name, command, err, stderrText(stderr.Bytes()))
	}
	resp, err := DecodeResponse(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %s: malformed response on stdout: %w%s", s.Name, command, err, stderrText(stderr.Bytes()))
	}
	if len(resp.Errors) > 0 {
		return nil, fmt.Errorf("plugin %s: %s", s.Name, strings.Join(resp.Errors, "; "))
	}
	var files []target.File
	seen := map[string]bool{}
	for _, f := range resp.Files {
		if err := CheckPath(f.Path); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", s.Name, err)
		}
		if seen[f.Path] {
			return nil, fmt.Errorf("plugin %s: file %q is returned twice", s.Name, f.Path)
		}
		seen[f.Path] = true
		files = append(files, target.File{Path: path.Join(s.Out, f.Path), Data: []byte(f.Content)})
	}
	return files, nil
}

// CheckOut reports an error unless out is a directory a plugin may write
// under: relative to the repository root, slash-separated, clean and
// inside the repository, and not the root itself.
func CheckOut(out string) error {
	switch {
	case out == "" || out == ".":
		return fmt.Errorf("out must name a directory under the repository root")
	case strings.Contains(out, "\\"):
		return fmt.Errorf("out %q must be slash-separated", out)
	case path.IsAbs(out):
		return fmt.Errorf("out %q must be relative to the repository root", out)
	case path.Clean(out) != out || out == ".." || strings.HasPrefix(out, "../"):
		return fmt.Errorf("out %q must be clean and inside the repository", out)
	}
	return nil
}

// stderrText formats a plugin's standard error for an error message: its
// last 4 KiB, indented, or nothing when it is empty.
func stderrText(b []byte) string {
	b = bytes.TrimRight(b, "\n")
	if len(b) == 0 {
		return ""
	}
	if len(b) > 4096 {
		b = append([]byte("..."), b[len(b)-4096:]...)
	}
	return "\nstderr:\n  " + strings.ReplaceAll(string(b), "\n", "\n  ")
}
