package chaos

import (
	"github.com/echomq/echomq/internal/literalscan"
	"path/filepath"
	"testing"

	"github.com/echomq/echomq/gen/model"
)

// TestNoProtocolLiterals scans the harness and cmd/emqchaos for protocol
// literals the manifest holds (class words, field and state names, key
// prefixes, kinds, reserve members, the version): they use the SDK's
// generated names only.
func TestNoProtocolLiterals(t *testing.T) {
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.go")
	cmd, _ := filepath.Glob("../../cmd/emqchaos/*.go")
	literalscan.Scan(t, literalscan.Literals(p), append(files, cmd...), "use the generated name")
}
