// Package cmdflag gives the subcommands of emqgen (and of any other
// command of this repository) the same flag habits:
//
//   - flags are accepted anywhere among the positional arguments
//     (emqgen diff OLD NEW -format json), and "--" ends the flags;
//   - -h, -help and --help print the usage on stdout and exit 0;
//   - a bad flag prints the problem and the usage on stderr and exits 2;
//   - an unknown subcommand is answered with the nearest known one
//     (Suggest: "did you mean check?").
package cmdflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses of Parse.
const (
	ExitOK    = 0 // help was asked for and printed
	ExitUsage = 2 // a bad flag, as Go's flag package exits
)

// FlagSet is a flag.FlagSet that knows its command's synopsis and
// summary, prints help on stdout and errors on stderr, and, once parsed,
// holds the positional arguments found among the flags.
type FlagSet struct {
	*flag.FlagSet
	prog, synopsis, summary string
	stdout, stderr          io.Writer
	args                    []string
}

// New returns the flag set of the command "prog name": synopsis is the
// usage line after the command's name ("[-check] [-manifest FILE]"),
// summary the paragraph under it.
func New(prog, name, synopsis, summary string, stdout, stderr io.Writer) *FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // Parse prints the usage itself, on the right stream
	return &FlagSet{FlagSet: fs, prog: prog, synopsis: synopsis, summary: summary, stdout: stdout, stderr: stderr}
}

// PrintUsage writes the command's usage (synopsis, summary and flags) to w.
func (f *FlagSet) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s %s %s\n\n%s\n", f.prog, f.Name(), f.synopsis, f.summary)
	var b strings.Builder
	f.SetOutput(&b)
	f.PrintDefaults()
	f.SetOutput(f.stderr)
	if b.Len() > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s", b.String())
	}
}

// Parse parses args, flags and positional arguments in any order; a "--"
// that is not a flag's value makes every later argument positional. It
// returns ok when the command should go on. Otherwise it has printed what
// was asked and returns the exit status: ExitOK after printing the usage
// on stdout for -h, ExitUsage after printing the problem and the usage on
// stderr for a bad flag.
func (f *FlagSet) Parse(args []string) (code int, ok bool) {
	f.args = nil
	for {
		if err := f.FlagSet.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				f.PrintUsage(f.stdout)
				return ExitOK, false
			}
			fmt.Fprintln(f.stderr)
			f.PrintUsage(f.stderr)
			return ExitUsage, false
		}
		rest := f.FlagSet.Args()
		used := len(args) - len(rest)
		if used > 0 && args[used-1] == "--" && !f.takesValue(args, used-2) {
			f.args = append(f.args, rest...)
			return 0, true
		}
		if len(rest) == 0 {
			return 0, true
		}
		f.args = append(f.args, rest[0])
		args = rest[1:]
	}
}

// takesValue reports whether args[i] is a flag that consumed the next
// argument as its value (-format json, not -format=json or -check).
func (f *FlagSet) takesValue(args []string, i int) bool {
	if i < 0 {
		return false
	}
	name, ok := strings.CutPrefix(args[i], "-")
	if !ok || name == "" || name == "-" {
		return false
	}
	name = strings.TrimPrefix(name, "-")
	if strings.Contains(name, "=") {
		return false
	}
	fl := f.Lookup(name)
	if fl == nil {
		return false
	}
	b, isBool := fl.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}

// Args returns the positional arguments, wherever they stood among the
// flags.
func (f *FlagSet) Args() []string { return f.args }

// NArg returns the number of positional arguments.
func (f *FlagSet) NArg() int { return len(f.args) }

// Arg returns the i-th positional argument, or "" when there is none.
func (f *FlagSet) Arg(i int) string {
	if i < 0 || i >= len(f.args) {
		return ""
	}
	return f.args[i]
}

// Suggest returns the name of names nearest to s — one that s abbreviates,
// or within two edits of it (a typo, a swapped or missing letter) — or ""
// when none is near enough to be what was meant.
func Suggest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := distance(s, n)
		if len(s) >= 2 && strings.HasPrefix(n, s) {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && n < best) {
			best, bestD = n, d
		}
	}
	if bestD > 2 || bestD >= len(s) {
		return ""
	}
	return best
}

// distance is the optimal string alignment distance of a and b: inserts,
// deletes, substitutions and swaps of adjacent letters each count one.
func distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
