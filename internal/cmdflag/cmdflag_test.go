package cmdflag_test

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/echomq/echomq/internal/cmdflag"
)

func set() (*cmdflag.FlagSet, *string, *bool, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	fs := cmdflag.New("emqgen", "diff", "[-format F] OLD NEW", "Compares two manifests.", &out, &errb)
	format := fs.String("format", "text", "the report format")
	check := fs.Bool("check", false, "write nothing")
	return fs, format, check, &out, &errb
}

func TestFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		pos    []string
		format string
		check  bool
	}{
		{[]string{"-format", "json", "a", "b"}, []string{"a", "b"}, "json", false},
		{[]string{"a", "b", "-format", "json"}, []string{"a", "b"}, "json", false},
		{[]string{"a", "-format=json", "b", "-check"}, []string{"a", "b"}, "json", true},
		{[]string{"a", "--", "-format", "json"}, []string{"a", "-format", "json"}, "text", false},
		{[]string{"-format", "--", "a"}, []string{"a"}, "--", false},
		{[]string{"-check", "--", "-x"}, []string{"-x"}, "text", true},
		{[]string{"-", "b"}, []string{"-", "b"}, "text", false},
		{nil, nil, "text", false},
	} {
		fs, format, check, _, errb := set()
		code, ok := fs.Parse(tc.args)
		if !ok || code != 0 {
			t.Errorf("Parse(%q) = %d, %v: %s", tc.args, code, ok, errb)
			continue
		}
		if !reflect.DeepEqual(fs.Args(), tc.pos) || *format != tc.format || *check != tc.check {
			t.Errorf("Parse(%q): args %q format %q check %v; want %q %q %v", tc.args, fs.Args(), *format, *check, tc.pos, tc.format, tc.check)
		}
		if fs.NArg() != len(tc.pos) || (len(tc.pos) > 0 && fs.Arg(0) != tc.pos[0]) || fs.Arg(len(tc.pos)) != "" {
			t.Errorf("Parse(%q): NArg/Arg disagree with Args %q", tc.args, fs.Args())
		}
	}
}

func TestHelpOnStdout(t *testing.T) {
	for _, h := range []string{"-h", "-help", "--help"} {
		fs, _, _, out, errb := set()
		code, ok := fs.Parse([]string{"a", h})
		if ok || code != cmdflag.ExitOK {
			t.Errorf("%s: Parse = %d, %v; want 0, false", h, code, ok)
		}
		if !strings.Contains(out.String(), "Usage: emqgen diff [-format F] OLD NEW") || !strings.Contains(out.String(), "-format") || errb.Len() != 0 {
			t.Errorf("%s: stdout %q, stderr %q", h, out, errb)
		}
	}
	fs, _, _, out, errb := set()
	code, ok := fs.Parse([]string{"a", "-nope"})
	if ok || code != cmdflag.ExitUsage || out.Len() != 0 || !strings.Contains(errb.String(), "-nope") || !strings.Contains(errb.String(), "Usage: emqgen diff") {
		t.Errorf("a bad flag: Parse = %d, %v; stdout %q, stderr %q", code, ok, out, errb)
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"check", "diff", "gen", "release", "validate"}
	for in, want := range map[string]string{
		"chekc":      "check",
		"chek":       "check",
		"cheque":     "",
		"valdiate":   "validate",
		"val":        "validate",
		"gne":        "gen",
		"generate":   "",
		"rel":        "release",
		"dif":        "diff",
		"x":          "",
		"frobnicate": "",
	} {
		if got := cmdflag.Suggest(in, names); got != want {
			t.Errorf("Suggest(%q) = %q; want %q", in, got, want)
		}
	}
}

func ExampleFlagSet_Parse() {
	fs := cmdflag.New("emqgen", "diff", "[-format F] OLD NEW", "Compares two manifests.", os.Stdout, os.Stderr)
	format := fs.String("format", "text", "the report format")
	if _, ok := fs.Parse([]string{"old.yaml", "new.yaml", "-format", "json"}); ok {
		fmt.Println(fs.Args(), *format)
	}
	// Output: [old.yaml new.yaml] json
}
