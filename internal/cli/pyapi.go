package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/compat"
)

// pyDir is where the Python SDK's package lives, relative to the
// repository root: sdk/python's src layout, package echomq.
const pyDir = "sdk/python/src/echomq"

// pyAPI reads the public Python API of ROOT/sdk/python/src/echomq
// (apirecord.PyAPI: the sources parsed by python3, nothing imported). It
// returns nil, ExitOK when the root has no Python SDK, and prints what to
// install and returns ExitUsage when it cannot be read.
func (e *env) pyAPI(root, why string) ([]string, int) {
	dir := filepath.Join(root, pyDir)
	if _, err := os.Stat(filepath.Join(dir, "__init__.py")); err != nil {
		return nil, ExitOK
	}
	lines, err := apirecord.PyAPI(context.Background(), dir)
	if err != nil {
		e.errorf("%s: %v", why, err)
		return nil, ExitUsage
	}
	return lines, ExitOK
}

// comparePy arranges for check to compare the Python API: when the
// baseline records one, the new side gets ROOT/sdk/python's; otherwise it
// says that the Python API is not compared. baseline names the baseline's
// Python record for that note.
func (e *env) comparePy(root, baseline string, old, new *compat.Side) int {
	if old.Surface == nil || old.Surface.Py == nil {
		e.errorf("note: %s records no Python API, so the Python SDK's API is not compared", baseline)
		return ExitOK
	}
	if new.Surface == nil {
		return ExitOK // the new manifest does not validate: its artifacts are not compared
	}
	lines, code := e.pyAPI(root, "the baseline records a Python API ("+old.Surface.PyFile+"), so check compares "+filepath.Join(root, pyDir)+"'s")
	if code != ExitOK {
		return code
	}
	if lines == nil {
		e.errorf("the baseline records a Python API (%s), but %s has no Python SDK to compare it with", old.Surface.PyFile, filepath.Join(root, pyDir))
		return ExitUsage
	}
	new.Surface.Py = lines
	return ExitOK
}
