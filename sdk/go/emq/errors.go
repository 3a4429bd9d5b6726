package emq

import (
	"errors"
	"fmt"
	"strings"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// ErrVersionFence means the keyspace's version record is not one this
// client may serve: another major, or a value that is not a version
// record. errors.As to *FenceError gives the value found.
var ErrVersionFence = errors.New("emq: version fence")

// ErrBundle means the reserve records another script bundle for this
// client's version: some client runs other scripts under the same version
// number. errors.As to *BundleError gives both digests.
var ErrBundle = errors.New("emq: bundle identity")

// FenceError is the version fence's refusal: what the keyspace holds and
// what this client speaks. It matches ErrVersionFence under errors.Is.
type FenceError struct {
	Found string // the version record found; empty when none could be read
	Want  string // this client's version record
}

// Error says what was found and what was wanted.
func (e *FenceError) Error() string {
	return fmt.Sprintf("emq: version fence: the keyspace is %q, this client speaks %q", e.Found, e.Want)
}

// Unwrap returns ErrVersionFence.
func (e *FenceError) Unwrap() error { return ErrVersionFence }

// BundleError is the bundle check's refusal. It matches ErrBundle under
// errors.Is.
type BundleError struct {
	Version string // the version whose bundle is recorded
	Found   string // the digest recorded in the reserve
	Want    string // this client's BundleDigest
}

// Error says which digests differ.
func (e *BundleError) Error() string {
	return fmt.Sprintf("emq: bundle identity: the reserve records bundle %s for version %s, this client runs %s", e.Found, e.Version, e.Want)
}

// Unwrap returns ErrBundle.
func (e *BundleError) Unwrap() error { return ErrBundle }

// ParseRefusal reads an error reply's text (without RESP's leading '-')
// the way the SDK reads every script's error: when its first word — the
// text up to the first space, or all of it — is a registered wire class
// (Classes), it returns a *ClassError with that class and the rest after
// the space as its message, and true. Any other reply (ERR, WRONGTYPE, a
// class word behind another prefix) returns nil and false.
func ParseRefusal(reply string) (*ClassError, bool) {
	word, rest, _ := strings.Cut(reply, " ")
	for _, c := range wire.Classes() {
		if word == c {
			return &ClassError{Class: word, Message: rest}, true
		}
	}
	return nil, false
}

// prefix opens every error message of the package, once.
const prefix = "emq: "

// onePrefix returns msg with one leading prefix and no other: the messages
// of wrapped errors keep their words, not their prefixes. A message with
// no prefix anywhere is returned as it is.
func onePrefix(msg string) string {
	if !strings.Contains(msg, prefix) {
		return msg
	}
	return prefix + strings.ReplaceAll(msg, prefix, "")
}

// prefixed is an error whose message was rid of inner prefixes; it wraps
// the error it was made from, so errors.Is and errors.As see everything
// that one wraps.
type prefixed struct {
	msg string
	err error
}

func (e *prefixed) Error() string { return e.msg }
func (e *prefixed) Unwrap() error { return e.err }

// errorf is fmt.Errorf with one prefix in the message (onePrefix): wrapping
// an error of this package, or of the generated wire layer, adds words to
// its message, never a second "emq: ".
func errorf(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	if msg := err.Error(); onePrefix(msg) != msg {
		return &prefixed{msg: onePrefix(msg), err: err}
	}
	return err
}

// joined is errors.Join with one prefix: its message is the messages of
// its errors rid of their prefixes, joined by "; ", after one prefix.
type joined struct{ errs []error }

func (e *joined) Error() string {
	msgs := make([]string, len(e.errs))
	for i, err := range e.errs {
		msgs[i] = strings.TrimPrefix(onePrefix(err.Error()), prefix)
	}
	return prefix + strings.Join(msgs, "; ")
}

func (e *joined) Unwrap() []error { return e.errs }

// join returns the errors that are not nil as one: nil when there are
// none, the error itself when there is one, a *joined otherwise.
func join(errs ...error) error {
	var out []error
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return &joined{errs: out}
}
