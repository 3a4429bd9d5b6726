package model

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSemver parses major.minor.patch, each a decimal without leading
// zeros.
func ParseSemver(s string) (Semver, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return Semver{}, fmt.Errorf("%q is not a version of the form major.minor.patch (decimal numbers without leading zeros)", s)
	}
	var v [3]int
	for i, p := range parts {
		if p == "" || (len(p) > 1 && p[0] == '0') || strings.TrimLeft(p, "0123456789") != "" {
			return Semver{}, fmt.Errorf("%q is not a version of the form major.minor.patch (decimal numbers without leading zeros)", s)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return Semver{}, fmt.Errorf("%q is not a version of the form major.minor.patch (decimal numbers without leading zeros)", s)
		}
		v[i] = n
	}
	return Semver{Major: v[0], Minor: v[1], Patch: v[2]}, nil
}

// String formats the version as major.minor.patch.
func (v Semver) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// Compare returns -1, 0 or 1 as v is lower than, equal to or higher than w.
func (v Semver) Compare(w Semver) int {
	for _, d := range [3]int{v.Major - w.Major, v.Minor - w.Minor, v.Patch - w.Patch} {
		if d < 0 {
			return -1
		}
		if d > 0 {
			return 1
		}
	}
	return 0
}

// FillVersion fills the <major>, <minor> and <patch> holes of a version
// record template.
func FillVersion(template string, v Semver) string {
	r := strings.NewReplacer("<major>", strconv.Itoa(v.Major), "<minor>", strconv.Itoa(v.Minor), "<patch>", strconv.Itoa(v.Patch))
	return r.Replace(template)
}
