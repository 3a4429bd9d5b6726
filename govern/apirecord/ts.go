package apirecord

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
)

// The TypeScript surface is the public API of the TypeScript SDK
// (sdk/ts, @echomq/sdk): every name its package.json entry points export,
// read from the .d.ts declarations tsc emits, one feature per line. A line
// is "<module> <feature>: <type>" — everything before the first ": " is
// the feature's key, e.g. "@echomq/sdk class Queue method push" with the
// type "(string, Payload) => Promise<boolean>". sdk/ts/tools/api.mjs
// (run under node with the package's own TypeScript compiler) writes the
// lines; TSAPI runs it.

// TSHeader is the comment line after Header in a TypeScript API record.
const TSHeader = "# The public TypeScript API of sdk/ts, from the .d.ts declarations tsc emits (sdk/ts/tools/api.mjs)."

// TSTool is the program that prints the TypeScript API, relative to sdk/ts.
const TSTool = "tools/api.mjs"

// ErrNoNode means the TypeScript API cannot be read here: node, or the
// TypeScript SDK's dependencies, are missing.
var ErrNoNode = errors.New("surface: the TypeScript API cannot be recorded here")

// tsHint says how to make the TypeScript API readable.
const tsHint = "recording the TypeScript API runs the TypeScript compiler under node: install Node 20 or later (Debian: apt-get install nodejs npm) and the SDK's dependencies (cd sdk/ts && npm ci); ./test.sh does both"

// TSAPI reads the public TypeScript API of the package in dir (sdk/ts):
// it runs TSTool there under node, which reads the declarations tsc built
// into dist/ when they are up to date with the sources and otherwise
// compiles the sources with the package's tsconfig.json in memory; nothing
// is written to the package. The record is cached by a digest of every
// input (tsSourceKey; cache.go), so that unchanged sources run no node. It fails with ErrNoNode, saying what to install, when node or
// the package's TypeScript compiler is missing, and with the compiler's
// diagnostics when the sources do not compile.
func TSAPI(ctx context.Context, dir string) ([]string, error) {
	// The tool runs in dir, so a relative dir would name it twice.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: node is not on PATH: %s", ErrNoNode, tsHint)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "typescript", "package.json")); err != nil {
		return nil, fmt.Errorf("%w: %s has no node_modules/typescript: %s", ErrNoNode, dir, tsHint)
	}
	key, keyErr := tsSourceKey(node, dir)
	if keyErr == nil {
		if v, ok := tsCache.Load(key); ok {
			return slices.Clone(v.([]string)), nil
		}
		if lines, ok := cacheLoad(key); ok && validLines(lines, tsKey) {
			tsCache.Store(key, slices.Clone(lines))
			return lines, nil
		}
	}
	toolRuns.Add(1)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, TSTool), dir)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("surface: reading the TypeScript API of %s: %v: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	var lines []string
	for _, l := range strings.Split(stdout.String(), "\n") {
		if l == "" {
			continue
		}
		if _, _, err := tsKey(l); err != nil {
			return nil, fmt.Errorf("surface: %s printed %w", TSTool, err)
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("surface: %s printed no API for %s", TSTool, dir)
	}
	if keyErr == nil {
		tsCache.Store(key, slices.Clone(lines))
		cacheStore(key, lines)
	}
	return lines, nil
}

// tsKey splits a TypeScript API line into its key and its type.
func tsKey(line string) (key, typ string, err error) {
	return lineKey("TypeScript", line)
}

// WriteTSAPI writes the on-disk record of a TypeScript API: the Header
// line, TSHeader, "# Version: <version>", then the lines sorted and
// without duplicates. A malformed line, or a version that is empty or
// spans lines, is an error and nothing is written.
func WriteTSAPI(w io.Writer, version string, lines []string) error {
	return writeLines(w, TSHeader, version, lines, tsKey)
}

// ReadTSAPI reads a record WriteTSAPI wrote and returns its lines.
// Comment and blank lines are ignored; a malformed line, a duplicate or a
// line out of order is reported with its line number.
func ReadTSAPI(r io.Reader) ([]string, error) {
	return readLines(r, tsKey)
}

// Moved is the kind of Break that groups the features one entry point of
// the TypeScript package no longer exports while other entry points of the
// package export them unchanged (the wire layer leaving the root for its
// subpath): code importing them from the old entry point stops compiling,
// and compiles again, unchanged otherwise, once its imports name the new
// one.
const Moved = "moved"

// CompareTSAPI compares two TypeScript API records: every line of old
// missing from new is a break, Changed when new has a line with the same
// key (the feature exists with another type or signature; an overloaded
// method has one line per signature) and Removed otherwise. Additions are
// compatible, and so is a function's or method's signature that only
// gained trailing optional parameters (every old call still compiles).
// Removed lines whose feature new still has, with the same type, at other
// entry points (modules) of the package are one Moved break per old
// module and set of new modules, Where "<old> moved to <new> [and <new>]",
// Old the first such line, New every one of them, newline-separated, its
// Message naming every exported name moved. The breaks are sorted by
// Where, then Old.
func CompareTSAPI(old, new []string) []Break {
	breaks := compareLines(old, new, tsKey, func(o, n string) bool { return optionalsAdded(o, n) || constMembersAdded(o, n) })
	return tsMoves(breaks, new)
}

// count is "n thing" or "n things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// tsMoves replaces the Removed breaks whose feature is at other modules of
// new, unchanged, by one Moved break per old module and set of new ones.
func tsMoves(breaks []Break, new []string) []Break {
	newSet := set(new)
	var modules []string
	for l := range newSet {
		if m, _, ok := strings.Cut(l, " "); ok && !slices.Contains(modules, m) {
			modules = append(modules, m)
		}
	}
	slices.Sort(modules)
	type group struct {
		from, to string
		lines    []string
		names    []string
	}
	groups := map[string]*group{}
	var out []Break
	for _, b := range breaks {
		from, rest, ok := strings.Cut(b.Old, " ")
		if b.Kind != Removed || !ok {
			out = append(out, b)
			continue
		}
		var to []string
		for _, m := range modules {
			if m != from && newSet[m+" "+rest] {
				to = append(to, m)
			}
		}
		if len(to) == 0 {
			out = append(out, b)
			continue
		}
		where := from + " moved to " + strings.Join(to, " and ")
		g := groups[where]
		if g == nil {
			g = &group{from: from, to: strings.Join(to, " and ")}
			groups[where] = g
		}
		g.lines = append(g.lines, b.Old)
		// "<kind> <name>[<T>]...: type": the exported name.
		key, _, _ := strings.Cut(rest, ": ")
		if f := strings.Fields(key); len(f) > 1 {
			name, _, _ := strings.Cut(f[1], "<")
			if !slices.Contains(g.names, name) {
				g.names = append(g.names, name)
			}
		}
	}
	for where, g := range groups {
		slices.Sort(g.lines)
		slices.Sort(g.names)
		out = append(out, Break{Kind: Moved, Where: where, Old: g.lines[0], New: strings.Join(g.lines, "\n"),
			Message: fmt.Sprintf("%s (%s) %s gone from %s and unchanged at %s: code importing them from %s compiles once it imports them from there: %s",
				count(len(g.names), "exported name"), count(len(g.lines), "feature"), map[bool]string{true: "is", false: "are"}[len(g.names) == 1],
				g.from, g.to, g.from, strings.Join(g.names, ", "))})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Where != out[j].Where {
			return out[i].Where < out[j].Where
		}
		return out[i].Old < out[j].Old
	})
	return out
}

// constMembersAdded reports whether the new line is the old exported const
// whose type is an object literal ("{ ...; }") with members appended,
// every old member equal and in place: a vocabulary's const gaining a word
// (WORD_ADDED, a minor), which code reading its members keeps compiling
// against.
func constMembersAdded(oldLine, newLine string) bool {
	ok, o, err1 := tsKey(oldLine)
	_, n, err2 := tsKey(newLine)
	if err1 != nil || err2 != nil || !strings.Contains(ok, " const ") {
		return false
	}
	head, found := strings.CutSuffix(o, " }")
	if !found || !strings.HasPrefix(o, "{ ") || !strings.HasSuffix(n, " }") || len(n) <= len(o) {
		return false
	}
	return strings.HasPrefix(n, head+" ")
}

// optionalsAdded reports whether the new line is the old function or
// method signature "(P...) => R" with trailing optional parameters added
// ("T?" or "(T)?"), everything else equal.
func optionalsAdded(oldLine, newLine string) bool {
	_, o, err1 := tsKey(oldLine)
	_, n, err2 := tsKey(newLine)
	if err1 != nil || err2 != nil {
		return false
	}
	op, or, ok1 := splitSignature(o)
	np, nr, ok2 := splitSignature(n)
	if !ok1 || !ok2 || or != nr || len(np) <= len(op) || !slices.Equal(op, np[:len(op)]) {
		return false
	}
	for _, p := range np[len(op):] {
		if !strings.HasSuffix(p, "?") || strings.HasPrefix(p, "...") {
			return false
		}
	}
	return true
}

// splitSignature splits "(A, B) => R" into its parameters, split at the
// commas outside brackets, and its return type.
func splitSignature(sig string) (params []string, ret string, ok bool) {
	if !strings.HasPrefix(sig, "(") {
		return nil, "", false
	}
	depth, start := 0, 1
	for i := 0; i < len(sig); i++ {
		switch sig[i] {
		case '(', '<', '[', '{':
			depth++
		case ')', '>', ']', '}':
			if sig[i] == '>' && i > 0 && sig[i-1] == '=' {
				continue // the arrow of a function type
			}
			depth--
			if depth == 0 {
				if p := strings.TrimSpace(sig[start:i]); p != "" {
					params = append(params, p)
				}
				rest, found := strings.CutPrefix(sig[i+1:], " => ")
				return params, rest, found
			}
		case ',':
			if depth == 1 {
				params = append(params, strings.TrimSpace(sig[start:i]))
				start = i + 1
			}
		}
	}
	return nil, "", false
}

// tsCache holds the API read per package state within one process, over
// the on-disk cache (cache.go): a check (or a test running many) reads the
// same unchanged sources again and again.
var tsCache sync.Map

// tsSourceKey names the state of the package in dir that its API depends
// on: the node binary; the package's compiler settings, manifest, lock
// file, installed packages (node_modules/.package-lock.json, npm's record
// of what it installed) and compiler version; the tool; and every file of
// its sources, tests and chaos programs (tsconfig.json compiles them all),
// by content. The declarations tsc built (dist/) are not part of it: the
// tool reads them only when they are up to date with these, and then they
// say what compiling these says.
func tsSourceKey(node, dir string) (string, error) {
	h := keyHash("typescript")
	hashProgram(h, node)
	fmt.Fprintf(h, "%s\x00", dir)
	for _, f := range []string{"tsconfig.json", "package.json", "package-lock.json", TSTool,
		filepath.Join("node_modules", ".package-lock.json"), filepath.Join("node_modules", "typescript", "package.json")} {
		if err := hashFile(h, dir, filepath.Join(dir, f)); err != nil {
			return "", err
		}
	}
	for _, d := range []string{"src", "test", "chaos"} {
		if err := hashTree(h, dir, filepath.Join(dir, d), nil, "node_modules"); err != nil {
			return "", err
		}
	}
	return "ts-" + hex.EncodeToString(h.Sum(nil)), nil
}
