package emq

import (
	"strings"
	"testing"
	"time"
)

func TestPreviewCutsOnARune(t *testing.T) {
	p := []byte(strings.Repeat("a", previewBytes-1) + "é and more")
	got := preview(p)
	want := `42 bytes "` + strings.Repeat("a", previewBytes-1) + `"…`
	if got != want {
		t.Fatalf("preview = %s, want %s", got, want)
	}
	if got := preview(nil); got != "0 bytes" {
		t.Fatalf("preview(nil) = %s", got)
	}
	if got := preview([]byte("x")); got != `1 byte "x"` {
		t.Fatalf("preview(x) = %s", got)
	}
}

func TestStringsShowWhatIsOdd(t *testing.T) {
	id := MustParseID("JOB0SX8JD1mXuy")
	// The id in a set its row's state does not name shows where it is.
	odd := JobInfo{ID: id, State: StatePending, In: []Set{SetPending, SetDead}, Payload: []byte("p")}
	if got, want := odd.String(), `JOB0SX8JD1mXuy pending attempts=0 in=[pending dead] payload=1 byte "p"`; got != want {
		t.Errorf("JobInfo.String = %s, want %s", got, want)
	}
	orphan := JobInfo{ID: id, In: []Set{SetActive}}
	if got, want := orphan.String(), "JOB0SX8JD1mXuy no row in=[active]"; got != want {
		t.Errorf("JobInfo.String = %s, want %s", got, want)
	}
	e := Entry{ID: id, At: time.UnixMilli(0), Exists: true, State: StateScheduled, Attempts: 2}
	if got, want := e.String(), "JOB0SX8JD1mXuy at=1970-01-01T00:00:00.000Z scheduled attempts=2"; got != want {
		t.Errorf("Entry.String = %s, want %s", got, want)
	}
	if got, want := (Entry{ID: id}).String(), "JOB0SX8JD1mXuy no row"; got != want {
		t.Errorf("Entry.String = %s, want %s", got, want)
	}
	if got, want := (KeyspaceVersion{Record: "echomq:9.0.0", Verdict: VersionForeign}).String(), `"echomq:9.0.0" (foreign)`; got != want {
		t.Errorf("KeyspaceVersion.String = %s, want %s", got, want)
	}
}
