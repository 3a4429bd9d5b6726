package emq

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// Verdict is what this package's version fence makes of the version record
// a keyspace holds. CheckVersionRecord and JudgeVersionRecord apply the same
// rules; the fence script applies them on the server.
type Verdict int

// The verdicts.
const (
	// VersionAbsent: the keyspace has no version record, so no client has
	// fenced it. Connect claims it; an observing client (Observe) neither
	// claims nor writes it.
	VersionAbsent Verdict = iota
	// VersionCurrent: the record is VersionRecord.
	VersionCurrent
	// VersionAhead: a higher minor or patch of this major. It is served:
	// minors are additive.
	VersionAhead
	// VersionBehind: a lower minor or patch of this major. Connect's fence
	// raises it to VersionRecord; an observing client leaves it.
	VersionBehind
	// VersionForeign: another major, another protocol, a value that is not
	// a version record, or a key of another type. It is refused and never
	// written.
	VersionForeign
)

// String names the verdict: absent, current, ahead, behind or foreign.
func (v Verdict) String() string {
	switch v {
	case VersionAbsent:
		return "absent"
	case VersionCurrent:
		return "current"
	case VersionAhead:
		return "ahead"
	case VersionBehind:
		return "behind"
	case VersionForeign:
		return "foreign"
	}
	return "Verdict(" + strconv.Itoa(int(v)) + ")"
}

// Admitted reports whether this package serves a keyspace with the
// verdict without raising it first: current or ahead.
func (v Verdict) Admitted() bool { return v == VersionCurrent || v == VersionAhead }

// parseVersionRecord reads a version record: the protocol's prefix and
// major.minor.patch in canonical decimals (canonicalDecimal), as the fence
// script reads it. ok is false for anything else.
func parseVersionRecord(record string) (v [3]int, ok bool) {
	rest, ok := strings.CutPrefix(record, wire.VersionRecordPrefix)
	if !ok {
		return v, false
	}
	parts := strings.Split(rest, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, s := range parts {
		if !canonicalDecimal(s) {
			return v, false
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			// Canonical but too long for an int: larger than any version
			// this package has, as the fence script compares it.
			n = math.MaxInt
		}
		v[i] = n
	}
	return v, true
}

// canonicalDecimal reports whether s is a number in canonical decimal:
// ASCII digits, no sign, no leading zero except "0" itself, any length.
func canonicalDecimal(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// recordOf is the version record of major.minor.patch.
func recordOf(v [3]int) string {
	return wire.VersionRecordPrefix + strconv.Itoa(v[0]) + "." + strconv.Itoa(v[1]) + "." + strconv.Itoa(v[2])
}

// judge is the verdict of version this on record: Foreign for anything not
// a record of this's major, else Current, Ahead or Behind by minor, then
// patch.
func judge(this [3]int, record string) Verdict {
	v, ok := parseVersionRecord(record)
	if !ok || v[0] != this[0] {
		return VersionForeign
	}
	switch {
	case v[1] > this[1] || v[1] == this[1] && v[2] > this[2]:
		return VersionAhead
	case v[1] < this[1] || v[1] == this[1] && v[2] < this[2]:
		return VersionBehind
	}
	return VersionCurrent
}

// thisVersion is Version as numbers.
var thisVersion = [3]int{wire.VersionMajor, wire.VersionMinor, wire.VersionPatch}

// JudgeVersionRecord is this package's verdict on a version record found
// in a keyspace: VersionCurrent, VersionAhead or VersionBehind within this
// major, VersionForeign for anything else (another major or protocol, a
// value that is not a record, the empty string). It never returns
// VersionAbsent: absence is what ReadVersion reports when there is no
// record to judge.
func JudgeVersionRecord(record string) Verdict { return judge(thisVersion, record) }

// KeyspaceVersion is a keyspace's version record as read, with this
// package's verdict on it.
type KeyspaceVersion struct {
	Record  string  // what the version record holds; "" when absent; the server's WRONGTYPE answer for a key of another type
	Verdict Verdict // JudgeVersionRecord(Record), or VersionAbsent
}

// ErrNotWritable means an observing client (Observe) refused to write
// because the keyspace's version record is absent or foreign: nothing says
// the keyspace speaks this major, so its scripts may not be run there.
// errors.As to *KeyspaceError gives the record.
var ErrNotWritable = errors.New("emq: keyspace not writable")

// KeyspaceError is an observing client's refusal to write a keyspace. It
// matches ErrNotWritable under errors.Is.
type KeyspaceError struct {
	KeyspaceVersion
}

// Error says what the version record holds and why that refuses writes.
func (e *KeyspaceError) Error() string {
	if e.Verdict == VersionAbsent {
		return fmt.Sprintf("emq: keyspace not writable: it has no version record (%s is absent): no client has fenced it, so nothing says it speaks major %d of %s (%s); connect a client with Connect first, which fences it", wire.KeyVersion, wire.VersionMajor, wire.Protocol, Version)
	}
	return fmt.Sprintf("emq: keyspace not writable: its version record %s holds %q, which is not a record of major %d (this package speaks %s): it belongs to another major or protocol, whose scripts and rows may differ", wire.KeyVersion, e.Record, wire.VersionMajor, Version)
}

// Unwrap returns ErrNotWritable.
func (e *KeyspaceError) Unwrap() error { return ErrNotWritable }

// Writable returns nil when this package's scripts may write the keyspace:
// its record is of this major (current, ahead or behind). Otherwise it
// returns a *KeyspaceError saying why not.
func (v KeyspaceVersion) Writable() error {
	if v.Verdict == VersionAbsent || v.Verdict == VersionForeign {
		return &KeyspaceError{v}
	}
	return nil
}

// readVersion reads and judges the version record with one GET; it writes
// nothing. A key of another type is VersionForeign, with the server's
// answer as the record.
func readVersion(ctx context.Context, rc rueidis.Client) (KeyspaceVersion, error) {
	s, err := rc.Do(ctx, rc.B().Get().Key(wire.KeyVersion).Build()).ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return KeyspaceVersion{Verdict: VersionAbsent}, nil
	case err != nil:
		if re, ok := rueidis.IsRedisErr(err); ok && strings.HasPrefix(re.Error(), "WRONGTYPE") {
			return KeyspaceVersion{Record: re.Error(), Verdict: VersionForeign}, nil
		}
		return KeyspaceVersion{}, errorf("emq: reading the version record %s: %w", wire.KeyVersion, err)
	}
	return KeyspaceVersion{Record: s, Verdict: JudgeVersionRecord(s)}, nil
}
