package cli

import (
	"context"
	"os"
	"path/filepath"

	"github.com/echomq/echomq/govern/apirecord"
	"github.com/echomq/echomq/govern/compat"
)

// tsDir is where the TypeScript SDK lives, relative to the repository root.
const tsDir = "sdk/ts"

// tsAPI reads the public TypeScript API of ROOT/sdk/ts (apirecord.TSAPI:
// tsc under node). It returns nil, ExitOK when the root has no TypeScript
// SDK, and prints what to install and returns ExitUsage when it cannot be
// read.
func (e *env) tsAPI(root, why string) ([]string, int) {
	dir := filepath.Join(root, tsDir)
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		return nil, ExitOK
	}
	lines, err := apirecord.TSAPI(context.Background(), dir)
	if err != nil {
		e.errorf("%s: %v", why, err)
		return nil, ExitUsage
	}
	return lines, ExitOK
}

// compareTS arranges for check to compare the TypeScript API: when the
// baseline records one, the new side gets ROOT/sdk/ts's; otherwise it says
// that the TypeScript API is not compared. baseline names the baseline's
// TypeScript record for that note.
func (e *env) compareTS(root, baseline string, old, new *compat.Side) int {
	if old.Surface == nil || old.Surface.TS == nil {
		e.errorf("note: %s records no TypeScript API, so the TypeScript SDK's API is not compared", baseline)
		return ExitOK
	}
	if new.Surface == nil {
		return ExitOK // the new manifest does not validate: its artifacts are not compared
	}
	lines, code := e.tsAPI(root, "the baseline records a TypeScript API ("+old.Surface.TSFile+"), so check compares "+filepath.Join(root, tsDir)+"'s")
	if code != ExitOK {
		return code
	}
	if lines == nil {
		e.errorf("the baseline records a TypeScript API (%s), but %s has no TypeScript SDK to compare it with", old.Surface.TSFile, filepath.Join(root, tsDir))
		return ExitUsage
	}
	new.Surface.TS = lines
	return ExitOK
}
