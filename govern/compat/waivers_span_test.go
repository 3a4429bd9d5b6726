package compat

import (
	"testing"

	"github.com/echomq/echomq/gen/model"
)

// A waiver stays bound to the version its change shipped in: it waives
// the finding in every comparison that spans that version (an older
// baseline against a later manifest), none that starts at or after it, and
// is reported unused only when it is the new version's own.
func TestWaiverSpansItsVersion(t *testing.T) {
	v := func(s string) model.Semver {
		t.Helper()
		x, err := model.ParseSemver(s)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	finding := func() []Finding {
		return []Finding{{Rule: "TS_API_NO_DELETE", Bump: Major, Path: "ts: x", Judged: true, Category: CategoryAPI}}
	}
	o := Options{Waivers: []Waiver{{Rule: "TS_API_NO_DELETE", Path: "ts: x", Version: "2.6.1", Reason: "moved", File: "waivers.yaml", Line: 2}}}
	for _, tc := range []struct {
		from, to string
		waived   bool
	}{
		{"2.6.0", "2.6.1", true}, // the version it ships in
		{"2.2.0", "2.7.0", true}, // a comparison spanning it
		{"2.0.0", "3.0.0", true},
		{"2.6.1", "2.7.0", false}, // after it: the baseline has the change
		{"2.2.0", "2.6.0", false}, // before it
	} {
		fs := o.apply(finding(), v(tc.from), v(tc.to))
		if got := fs[0].Waiver != nil; got != tc.waived {
			t.Errorf("%s → %s: waived %v, want %v", tc.from, tc.to, got, tc.waived)
		}
		if len(fs) != 1 {
			t.Errorf("%s → %s: %d findings, want the one: %v", tc.from, tc.to, len(fs), fs)
		}
	}
	// Bound to the new version and matching nothing: reported unused.
	fs := o.apply(nil, v("2.6.0"), v("2.6.1"))
	if len(fs) != 1 || fs[0].Rule != "WAIVER_UNUSED" {
		t.Errorf("an unused waiver of the new version: %v, want WAIVER_UNUSED", fs)
	}
	// Of an older version the comparison spans, matching nothing: quiet.
	if fs := o.apply(nil, v("2.2.0"), v("2.7.0")); len(fs) != 0 {
		t.Errorf("an older waiver matching nothing: %v, want no finding", fs)
	}
}
