package emq

import (
	"errors"
	"io"
	"testing"
)

func TestOnePrefix(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"emq: connection failed: emq: connect: dial tcp", "emq: connection failed: connect: dial tcp"},
		{"job 3: emq: push: EOF", "emq: job 3: push: EOF"},
		{"dial tcp 127.0.0.1:1: connect: connection refused", "dial tcp 127.0.0.1:1: connect: connection refused"},
		{"emq: invalid argument", "emq: invalid argument"},
	} {
		if got := onePrefix(tc.in); got != tc.want {
			t.Errorf("onePrefix(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestErrorfKeepsTheChain(t *testing.T) {
	inner := &FenceError{Found: "x", Want: "y"}
	err := errorf("%w: the version fence could not run: %w", ErrConnection, errorf("emq: fence: %w", io.EOF))
	if got, want := err.Error(), "emq: connection failed: the version fence could not run: fence: EOF"; got != want {
		t.Errorf("errorf = %q, want %q", got, want)
	}
	if !errors.Is(err, ErrConnection) || !errors.Is(err, io.EOF) {
		t.Errorf("errorf lost the chain: %v", err)
	}
	j := join(inner, err)
	want := `emq: version fence: the keyspace is "x", this client speaks "y"; connection failed: the version fence could not run: fence: EOF`
	if got := j.Error(); got != want {
		t.Errorf("join = %q, want %q", got, want)
	}
	var fe *FenceError
	if !errors.As(j, &fe) || fe != inner || !errors.Is(j, ErrConnection) || !errors.Is(j, ErrVersionFence) || !errors.Is(j, io.EOF) {
		t.Errorf("join lost the chain: %v", j)
	}
	if join(nil, nil) != nil || join(nil, io.EOF) != io.EOF {
		t.Error("join of nils, or of one error, is not that")
	}
}
