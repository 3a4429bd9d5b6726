package model

import (
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/echomq/echomq/gen/cases"
	"github.com/echomq/echomq/gen/manifest"
)

// FuzzParseID checks ParseID against an independent oracle: an id parses
// exactly when FormatID can produce it (a kind of capitals and a body that
// is a base62 snowflake below 2^63), and a parsed id formats back to
// itself.
//
//	go test ./gen/model -run XXX -fuzz FuzzParseID -fuzztime 30s
func FuzzParseID(f *testing.F) {
	c := loadReal(f).IDs
	for _, ex := range c.Examples {
		f.Add(ex.ID)
	}
	for _, bad := range c.Invalid {
		f.Add(bad)
	}
	for _, s := range []string{"JOB00000000000", "JOBAzL8n0Y58m7", "JOBAzL8n0Y58m8", "JOBB0000000000", "ÄBC0NgWEfAEJfs", "JOB0NgWEfAEJ\x00s"} {
		f.Add(s)
	}
	limit := new(big.Int).Lsh(big.NewInt(1), 63)
	producible := func(id string) bool {
		if len(id) != c.Length {
			return false
		}
		for i := 0; i < c.KindLength; i++ {
			if id[i] < 'A' || id[i] > 'Z' {
				return false
			}
		}
		v := new(big.Int)
		for i := c.KindLength; i < len(id); i++ {
			d := strings.IndexByte(c.Alphabet, id[i])
			if d < 0 {
				return false
			}
			v.Mul(v, big.NewInt(int64(len(c.Alphabet))))
			v.Add(v, big.NewInt(int64(d)))
		}
		return v.Cmp(limit) < 0
	}
	f.Fuzz(func(t *testing.T, id string) {
		d, err := c.ParseID(id)
		if want := producible(id); (err == nil) != want {
			t.Fatalf("ParseID(%q) error = %v, but FormatID can produce it: %v", id, err, want)
		}
		if err != nil {
			return
		}
		if back := c.FormatID(d.Kind, d.Value); back != id {
			t.Fatalf("FormatID(ParseID(%q)) = %q", id, back)
		}
		if d.Value>>63 != 0 || d.Node < 0 || d.Node > 1023 || d.Sequence < 0 || d.Sequence > 4095 || d.Time.Before(c.Epoch) {
			t.Fatalf("ParseID(%q) = %+v: a field is out of its range", id, d)
		}
	})
}

// FuzzResolve sends mutated manifests through the whole model: it must
// never panic, and a refusal must be *manifest.Errors whose every line
// names the file.
//
//	go test ./gen/model -run XXX -fuzz FuzzResolve -fuzztime 30s
func FuzzResolve(f *testing.F) {
	real, err := os.ReadFile(realManifest)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	// Every golden case's manifest, valid or broken (golden/cases).
	cs, err := cases.List("../..")
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cs {
		f.Add(c.Manifest)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("protocol.yaml", data)
		if err == nil {
			if p == nil {
				t.Fatal("Parse returned neither a protocol nor an error")
			}
			return
		}
		var es *manifest.Errors
		if !errors.As(err, &es) {
			t.Fatalf("error is %T, want *manifest.Errors: %v", err, err)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "protocol.yaml:") {
				t.Fatalf("line %q does not start with the file name; the whole error:\n%s", line, err)
			}
		}
		// The refusal is the same every time, and every position is in the
		// file (a syntax error may point just past its end).
		if _, again := Parse("protocol.yaml", data); fmt.Sprint(again) != err.Error() {
			t.Fatalf("Parse is not deterministic:\n%v\n%v", err, again)
		}
		// Lines as yaml.v3 counts them: CR LF, and each of CR, LF, NEL, LS
		// and PS alone.
		lines := len(strings.Split(strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n").Replace(string(data)), "\n"))
		for _, e := range es.List {
			if e.Pos.Line < 0 || e.Pos.Line > lines+1 || (e.Pos.Line > 0 && e.Pos.Col < 1) {
				t.Fatalf("%v points outside the file (%d lines)", e, lines)
			}
		}
	})
}
