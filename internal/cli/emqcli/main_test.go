package emqcli_test

import (
	"bytes"
	"testing"

	"github.com/echomq/echomq/internal/cli/emqcli"
)

// run runs emq with args in-process and returns its exit status, stdout
// and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := emqcli.Main(args, &out, &errb)
	return code, out.String(), errb.String()
}
