package chaos

import (
	"fmt"
	"os"
	"path/filepath"
)

// pyDirEnv overrides where the Python SDK (sdk/python) is.
const pyDirEnv = "EMQCHAOS_PY_DIR"

// pyBuildHint says how to get what the Python programs need.
const pyBuildHint = "the interop scenarios run the Python SDK's chaos programs (sdk/python/chaos) in the SDK's virtual environment: install python3 with its venv module (Debian: apt-get install python3 python3-venv) and create it: (cd sdk/python && python3 -m venv .venv && .venv/bin/python -m pip install --require-hashes --no-deps -r requirements-dev.lock); ./test.sh does both"

// pyProgram returns the virtual environment's python and the path of the
// Python chaos program name (sdk/python/chaos/<name>.py). It fails, with
// the install hint, when the environment or the program is missing.
func pyProgram(name string) (python, script string, err error) {
	dir, err := sdkDir(pyDirEnv, "pyproject.toml", pyBuildHint, "sdk", "python")
	if err != nil {
		return "", "", err
	}
	python = filepath.Join(dir, ".venv", "bin", "python")
	if _, err := os.Stat(python); err != nil {
		return "", "", fmt.Errorf("chaos: the Python SDK's virtual environment %s is missing: %s", filepath.Dir(filepath.Dir(python)), pyBuildHint)
	}
	script = filepath.Join(dir, "chaos", name+".py")
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("chaos: the Python chaos program %s is missing: %s", script, pyBuildHint)
	}
	return python, script, nil
}
