package sdkref_test

import (
	"path/filepath"
	"testing"

	"github.com/echomq/echomq/internal/literalscan"
)

// TestNoProtocolLiteralsInTools scans the modules built on the public Go
// SDK (the dashboard, the metrics exporters) for protocol literals: they
// use the SDK's generated names only.
func TestNoProtocolLiteralsInTools(t *testing.T) {
	var files []string
	for _, pattern := range []string{"../../dashboard/*.go", "../../dashboard/*/*.go", "../../dashboard/*/*/*.go", "../../exporters/*/*.go"} {
		m, _ := filepath.Glob(pattern)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no file of the dashboard or the exporters found")
	}
	literalscan.Scan(t, literalscan.Literals(reference(t)), files, "use the generated name")
}
