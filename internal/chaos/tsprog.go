package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Lang is the language of a worker process or a producer.
type Lang string

// The languages the harness runs.
const (
	LangGo Lang = "go" // the Go SDK (sdk/go/emq), in this executable
	LangTS Lang = "ts" // the TypeScript SDK (sdk/ts), under node
	LangPy Lang = "py" // the Python SDK (sdk/python), under its virtual environment's python
)

// langName is a language's name in prose.
func langName(l Lang) string {
	switch l {
	case LangGo:
		return "Go"
	case LangTS:
		return "TypeScript"
	case LangPy:
		return "Python"
	case LangOld, LangPrev, LangPrev24, LangPrev25, LangPrev26, LangPrev27:
		return "Go " + oldReleases[l]
	}
	return string(l)
}

// tsDirEnv overrides where the TypeScript SDK (sdk/ts) is.
const tsDirEnv = "EMQCHAOS_TS_DIR"

// tsBuildHint says how to get what the TypeScript programs need.
const tsBuildHint = "the interop scenarios run the TypeScript SDK's chaos programs under node: install Node 20 or later (Debian: apt-get install nodejs npm) and build sdk/ts first: (cd sdk/ts && npm ci && npx tsc -p tsconfig.json); ./test.sh does both"

// tsProgram returns the node binary and the path of the built TypeScript
// chaos program name (sdk/ts/dist/chaos/<name>.js). It fails, with the
// install hint, when node is not on PATH or the program is not built.
func tsProgram(name string) (node, script string, err error) {
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("chaos: node is not on PATH: %s", tsBuildHint)
	}
	dir, err := tsDir()
	if err != nil {
		return "", "", err
	}
	script = filepath.Join(dir, "dist", "chaos", name+".js")
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("chaos: the TypeScript chaos program %s is not built: %s", script, tsBuildHint)
	}
	return node, script, nil
}

// tsDir finds sdk/ts: $EMQCHAOS_TS_DIR, else sdk/ts above the working
// directory, else beside this source file's module.
func tsDir() (string, error) {
	return sdkDir(tsDirEnv, "package.json", tsBuildHint, "sdk", "ts")
}

// sdkDir finds an SDK's directory (elem under the repository root, holding
// marker): $env, else that directory above the working directory, else
// beside this source file's module.
func sdkDir(env, marker, hint string, elem ...string) (string, error) {
	if d := os.Getenv(env); d != "" {
		return filepath.Abs(d)
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	rel := filepath.Join(elem...)
	for _, d := range starts {
		for {
			cand := filepath.Join(d, rel)
			if _, err := os.Stat(filepath.Join(cand, marker)); err == nil {
				return cand, nil
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	return "", fmt.Errorf("chaos: cannot find %s above the working directory (set %s): %s", filepath.ToSlash(rel), env, hint)
}
