package emq_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/redistest"
)

// fences returns the fenced blocks of a Markdown text, each with its info
// string (the word after the opening fence).
func fences(md string) (infos, blocks []string) {
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(lines[i], "```"))
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		infos = append(infos, info)
		blocks = append(blocks, strings.Join(body, "\n")+"\n")
	}
	return infos, blocks
}

// section returns the text of the README's "## name" section, up to the
// next section.
func section(md, name string) string {
	_, rest, ok := strings.Cut(md, "\n## "+name+"\n")
	if !ok {
		return ""
	}
	text, _, _ := strings.Cut(rest, "\n## ")
	return text
}

// The README's quickstart runs as written: its Go block becomes the main
// package of a fresh module whose go.mod is the README's own "from a
// checkout" lines (require and replace, pointed at this checkout), built
// with the go command and run against a real redis-server this test starts
// (its address in EMQ_ADDR, as the README says); what it prints is what
// the README says it prints.
func TestREADMEQuickstart(t *testing.T) { runREADMESection(t, "Quickstart") }

// The README's "Why did my job fail?" program runs as written, like the
// quickstart, and prints the failure history the README shows.
func TestREADMEWhyDidMyJobFail(t *testing.T) { runREADMESection(t, "Why did my job fail?") }

// The README's "Deduplication and cancellation" program (echomq 2.5.0)
// runs as written, like the quickstart: the second push meets the first
// job, and the running job cancelled by its key cancels its handler.
func TestREADMEDedupAndCancel(t *testing.T) { runREADMESection(t, "Deduplication and cancellation") }

// The README's "Schedulers" program (echomq 2.6.0) runs as written, like
// the quickstart: the second upsert keeps the schedule, the cron
// expression's runs cross the daylight-saving change, and the worker runs
// what the runner fired.
func TestREADMESchedulers(t *testing.T) { runREADMESection(t, "Schedulers") }

// The README's "Pausing a queue and capping concurrency" program (echomq
// 2.7.0) runs as written, like the quickstart: nothing is claimed while
// the queue is paused, and no more than its cap once it resumes; under a
// rate limit (2.8.0), no more starts than it admits now.
func TestREADMEPolicy(t *testing.T) { runREADMESection(t, "Pausing a queue and capping concurrency") }

// The README's "Results, progress and retries" program (echomq 2.4.0) runs
// as written, like the quickstart, and prints the attempts the README
// shows.
func TestREADMEResultsProgressRetries(t *testing.T) {
	runREADMESection(t, "Results, progress and retries")
}

// runREADMESection runs the Go block of the README's section name as the
// quickstart test does, and compares what it prints with the section's
// block after it.
func runREADMESection(t *testing.T, name string) {
	sdk, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(sdk, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, all := fences(string(md))
	var gomod string
	for _, b := range all {
		if strings.Contains(b, "replace github.com/echomq/echomq/sdk/go =>") {
			gomod = b
		}
	}
	text := section(string(md), name)
	if text == "" {
		t.Fatalf("the README has no section %q", name)
	}
	infos, blocks := fences(text)
	var program, output string
	for i, info := range infos {
		b := blocks[i]
		switch {
		case info == "go":
			if program != "" {
				t.Fatalf("the README's section %q has more than one go block: which is its program?", name)
			}
			program = b
		case info == "" && program != "" && output == "":
			output = b // the block after the program: what it prints
		}
	}
	if program == "" || gomod == "" || output == "" {
		t.Fatalf("the README lacks its %q program (go block %t), its go.mod lines (%t) or the output it shows (%t)", name, program != "", gomod != "", output != "")
	}
	const placeholder = "/path/to/echomq/sdk/go"
	if !strings.Contains(gomod, placeholder) {
		t.Fatalf("the README's replace directive does not point at %s:\n%s", placeholder, gomod)
	}
	gomod = "module quickstart\n\ngo 1.25.0\n\n" + strings.ReplaceAll(gomod, placeholder, sdk)

	dir := t.TempDir()
	for name, body := range map[string]string{"main.go": program, "go.mod": gomod} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := os.ReadFile(filepath.Join(sdk, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The module proxy is allowed: on a fresh machine the module cache
	// lacks what go mod tidy reads of the SDK's dependencies' own tests.
	goEnv := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	run := func(env []string, name string, args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir, cmd.Env = dir, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
		}
		return stdout.Bytes()
	}
	// go mod tidy, as the README says.
	run(goEnv, "go", "mod", "tidy")
	run(goEnv, "go", "build", "-o", "quickstart", ".")

	srv := redistest.Start(t)
	got := run(append(os.Environ(), "EMQ_ADDR="+srv.Addr()), filepath.Join(dir, "quickstart"))
	if string(got) != output {
		t.Fatalf("the README's %q program printed\n%s\nthe README says it prints\n%s", name, got, output)
	}
}
