package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/govern/apirecord"
)

// BenchmarkCheck measures emqgen check as a reviewer runs it: the built
// binary, one process per check, in the repository root, with its caches
// (the API records', the witness's testees) in a directory of the
// benchmark's own (apirecord.CacheEnv). warm: the caches hold this state
// of the sources; cold: they are empty, the TypeScript declarations tsc
// built (dist/, as ./test.sh leaves them) up to date; cold-compile: empty,
// and the TypeScript API read by compiling the sources (no usable dist/).
// Go's build cache is warm in every case. Run it with
//
//	go test -run '^$' -bench BenchmarkCheck -benchtime 5x ./internal/cli/
//
// and read the load it ran under in its log (/proc/loadavg).
func BenchmarkCheck(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "emqgen")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/emqgen").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	load := func() string {
		data, _ := os.ReadFile("/proc/loadavg")
		return strings.TrimSpace(string(data))
	}
	b.Logf("load before: %s", load())
	defer func() { b.Logf("load after: %s", load()) }()
	check := func(b *testing.B, cache string, env []string, args ...string) {
		b.Helper()
		var out bytes.Buffer
		cmd := exec.Command(bin, append([]string{"check"}, args...)...)
		cmd.Dir = "../.."
		cmd.Env = append(append(os.Environ(), apirecord.CacheEnv+"="+cache), env...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			b.Fatalf("emqgen check %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}
	warm := b.TempDir()
	check(b, warm, nil) // fills the caches
	for _, c := range []struct {
		name string
		cold bool
		env  []string
		args []string
	}{
		{"witness-off/warm", false, nil, []string{"-witness", "off"}},
		{"witness/warm", false, nil, nil},
		{"witness-off/cold", true, nil, []string{"-witness", "off"}},
		{"witness/cold", true, nil, nil},
		{"witness/cold-compile", true, []string{"EMQ_API_COMPILE=1"}, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			var total time.Duration
			n := 0
			for b.Loop() {
				cache := warm
				if c.cold {
					b.StopTimer()
					cache = b.TempDir()
					b.StartTimer()
				}
				started := time.Now()
				check(b, cache, c.env, c.args...)
				total += time.Since(started)
				n++
			}
			b.ReportMetric(total.Seconds()/float64(n), "s/check")
		})
	}
}
