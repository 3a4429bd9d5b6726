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
