package apirecord

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// needTS fails the test, with the install hint, when node or the
// TypeScript SDK's compiler is missing.
func needTS(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: " + tsHint)
	}
	mods, err := filepath.Abs("../../sdk/ts/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(mods, "typescript", "package.json")); err != nil {
		t.Fatal("sdk/ts has no node_modules/typescript: " + tsHint)
	}
	return mods
}

// tinyTSPackage writes a package of one source file in the shape of sdk/ts
// (its package.json exports dist/src/index.d.ts; the SDK's tools/api.mjs;
// its node_modules linked), small enough to compile in a second.
func tinyTSPackage(t *testing.T, source string) string {
	t.Helper()
	mods := needTS(t)
	dir := t.TempDir()
	tool, err := os.ReadFile(filepath.Join("../../sdk/ts", TSTool))
	if err != nil {
		t.Fatal(err)
	}
	for rel, text := range map[string]string{
		"package.json":  `{"name": "@echomq/tiny", "type": "module", "exports": {".": {"types": "./dist/src/index.d.ts", "import": "./dist/src/index.js"}}}`,
		"tsconfig.json": `{"compilerOptions": {"target": "ES2022", "lib": ["ES5"], "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true, "declaration": true, "rootDir": ".", "outDir": "dist", "skipLibCheck": true, "types": []}, "include": ["src/**/*.ts"]}`,
		"src/index.ts":  source,
		TSTool:          string(tool),
	} {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cacheEntries returns the cache's entry files of a kind ("ts", "py").
func cacheEntries(t *testing.T, cache, kind string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(cache, "apirecord", kind+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(files, func(f string) bool { return strings.Contains(f, ".tmp-") })
}

// corrupt flips one byte of every entry's record, so that its digest no
// longer matches.
func corrupt(t *testing.T, entries []string) {
	t.Helper()
	for _, f := range entries {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-2] ^= 1
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The TypeScript record is cached on disk by its inputs' content: a
// second read (in a fresh process: the in-process cache is cleared) runs
// no node; one source byte changed is another key, read anew; a corrupt
// entry is ignored, the record read again and the entry rewritten.
func TestTSAPIDiskCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(CacheEnv, cache)
	pkg := tinyTSPackage(t, "export function f(a: number): string {\n  return String(a);\n}\n")
	read := func() ([]string, int64) {
		t.Helper()
		tsCache.Clear()
		before := toolRuns.Load()
		lines, err := TSAPI(context.Background(), pkg)
		if err != nil {
			t.Fatal(err)
		}
		return lines, toolRuns.Load() - before
	}
	first, runs := read()
	if runs != 1 || !slices.Contains(first, "@echomq/tiny function f: (number) => string") {
		t.Fatalf("first read: %d tool runs, %q; want 1 run recording f", runs, first)
	}
	if n := len(cacheEntries(t, cache, "ts")); n != 1 {
		t.Fatalf("%d cache entries after the first read; want 1", n)
	}
	again, runs := read()
	if runs != 0 || !slices.Equal(again, first) {
		t.Errorf("second read: %d tool runs, %q; want none and the same record", runs, again)
	}
	// One byte of the source: f becomes g.
	src := filepath.Join(pkg, "src", "index.ts")
	data, _ := os.ReadFile(src)
	if err := os.WriteFile(src, bytes.Replace(data, []byte("function f("), []byte("function g("), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, runs := read()
	if runs != 1 || !slices.Contains(changed, "@echomq/tiny function g: (number) => string") || slices.Contains(changed, first[0]) {
		t.Errorf("after one source byte changed: %d tool runs, %q; want 1 run recording g and not f", runs, changed)
	}
	entries := cacheEntries(t, cache, "ts")
	corrupt(t, entries)
	healed, runs := read()
	if runs != 1 || !slices.Equal(healed, changed) {
		t.Errorf("with corrupt entries: %d tool runs, %q; want 1 run and the record %q", runs, healed, changed)
	}
	for _, f := range entries {
		data, _ := os.ReadFile(f)
		if lines, ok := decodeEntry(data); ok && slices.Equal(lines, changed) {
			return
		}
	}
	t.Errorf("no entry of %q holds the record again: the corrupt entry was not rewritten", entries)
}

// The tool reads the declarations tsc built when they are newer than
// every input, and they say what compiling says; a source edited after
// the build is compiled instead, never read from the stale build.
func TestTSAPIBuiltDeclarations(t *testing.T) {
	pkg := tinyTSPackage(t, "export const version: string = \"1\";\nexport function f(a: number): string {\n  return String(a);\n}\n")
	tool := func(env ...string) (string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("node", filepath.Join(pkg, TSTool), pkg)
		cmd.Dir = pkg
		cmd.Env = append(os.Environ(), append(env, "EMQ_API_TRACE=1")...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v: %s", TSTool, err, stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	if out, err := exec.Command("node", filepath.Join(pkg, "node_modules", "typescript", "bin", "tsc"), "-p", pkg).CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v: %s", err, out)
	}
	built, how := tool()
	if !strings.Contains(how, "read the built declarations") {
		t.Errorf("with an up-to-date build the tool said %q; want it to read the built declarations", how)
	}
	compiled, how := tool("EMQ_API_COMPILE=1")
	if !strings.Contains(how, "compiled the sources") || compiled != built || !strings.Contains(built, "function f: (number) => string") {
		t.Errorf("compiled (%q):\n%s\nbuilt:\n%s\nwant the same record, with f", how, compiled, built)
	}
	src := filepath.Join(pkg, "src", "index.ts")
	data, _ := os.ReadFile(src)
	if err := os.WriteFile(src, bytes.Replace(data, []byte("function f("), []byte("function g("), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	edited, how := tool()
	if !strings.Contains(how, "compiled the sources") || !strings.Contains(edited, "function g: (number) => string") || strings.Contains(edited, "function f:") {
		t.Errorf("after a source edit the tool said %q and printed\n%s\nwant a compile recording g", how, edited)
	}
}

// The Python record is cached like the TypeScript one.
func TestPyAPIDiskCache(t *testing.T) {
	needPython(t)
	cache := t.TempDir()
	t.Setenv(CacheEnv, cache)
	pkg := filepath.Join(t.TempDir(), "echomq")
	if err := os.CopyFS(pkg, os.DirFS("testdata/pyapi/echomq")); err != nil {
		t.Fatal(err)
	}
	read := func() ([]string, int64) {
		t.Helper()
		before := toolRuns.Load()
		lines, err := PyAPI(context.Background(), pkg)
		if err != nil {
			t.Fatal(err)
		}
		return lines, toolRuns.Load() - before
	}
	first, runs := read()
	if runs != 1 || len(first) == 0 {
		t.Fatalf("first read: %d tool runs, %d lines", runs, len(first))
	}
	again, runs := read()
	if runs != 0 || !slices.Equal(again, first) {
		t.Errorf("second read: %d tool runs; want none and the same record", runs)
	}
	if err := os.WriteFile(filepath.Join(pkg, "added.py"), []byte("def h(x: int) -> int:\n    return x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, runs := read()
	if runs != 1 || !slices.ContainsFunc(changed, func(l string) bool { return strings.Contains(l, "function h") }) {
		t.Errorf("after a module was added: %d tool runs, %d lines; want 1 run recording h", runs, len(changed))
	}
	corrupt(t, cacheEntries(t, cache, "py"))
	healed, runs := read()
	if runs != 1 || !slices.Equal(healed, changed) {
		t.Errorf("with corrupt entries: %d tool runs; want 1 and the same record", runs)
	}
	if again, runs := read(); runs != 0 || !slices.Equal(again, changed) {
		t.Errorf("after the corrupt entry was rewritten: %d tool runs; want none", runs)
	}
}
