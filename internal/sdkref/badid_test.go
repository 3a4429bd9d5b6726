package sdkref_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/echomq/echomq/sdk/go/emq"
)

// TestMalformedIDStringsRefused: the manifest's invalid id examples and
// hostile strings are refused with ErrID by ParseID, UnmarshalText and
// JSON decoding, as are a good id with a space before or after it. (Moved
// from the SDK's TestBadInputRefusedBeforeAnyCommand: parsing sends no
// command, and the manifest's examples are the root module's to read.)
func TestMalformedIDStringsRefused(t *testing.T) {
	good, _, _ := seedIDs(t)
	p := reference(t)
	_, _, hostile := seedIDs(t)
	for _, s := range append(append(slices.Clone(p.IDs.Invalid), hostile...), good.String()+" ", " "+good.String()) {
		id, err := emq.ParseID(s)
		if !errors.Is(err, emq.ErrID) || !id.IsZero() {
			t.Errorf("ParseID(%q) = %v, %v; want ErrID", s, id, err)
		}
		var viaText emq.ID
		if err := viaText.UnmarshalText([]byte(s)); !errors.Is(err, emq.ErrID) {
			t.Errorf("UnmarshalText(%q) = %v; want ErrID", s, err)
		}
		quoted, _ := json.Marshal(s)
		var job struct{ Order emq.ID }
		if err := json.Unmarshal([]byte(`{"Order":`+string(quoted)+`}`), &job); !errors.Is(err, emq.ErrID) {
			t.Errorf("json.Unmarshal of %s = %v; want ErrID", quoted, err)
		}
	}
}
