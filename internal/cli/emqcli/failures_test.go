package emqcli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/echomq/echomq/internal/cli/emqcli"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// failedSeed is a queue with a job that failed twice and died (recorded
// by the SDK's RetryFailed and BuryFailed), a dead job whose death a 2.2
// client's Bury left unrecorded, and a pending job without a record.
type failedSeed struct {
	srv                          *redistest.Server
	q                            *emq.Queue
	died, unrecorded, untroubled emq.ID
}

func seedFailures(t *testing.T) *failedSeed {
	t.Helper()
	srv := redistest.Start(t)
	c := connect(t, srv)
	q, err := c.Queue("mail")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxP(t)
	s := &failedSeed{srv: srv, q: q}
	for _, id := range []*emq.ID{&s.died, &s.unrecorded, &s.untroubled} {
		if *id, err = c.Mint(emq.WorkKind); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Push(ctx, *id, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(want emq.ID) emq.Job {
		t.Helper()
		j, ok, err := q.Claim(ctx, time.Minute)
		if err != nil || !ok || j.ID != want {
			t.Fatalf("Claim = %v, %v, %v; want %s", j, ok, err, want)
		}
		return j
	}
	j := claim(s.died)
	if _, err := q.RetryFailed(ctx, j.ID, j.Token, 0, emq.Failure{Class: emq.FailureClassTimeout, Worker: "host-a:41", Message: "deadline exceeded"}); err != nil {
		t.Fatal(err)
	}
	j = claim(s.unrecorded)
	if err := q.Bury(ctx, j.ID, j.Token); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Promote(ctx, 10); err != nil || n != 1 {
		t.Fatalf("Promote = %d, %v", n, err)
	}
	j = claim(s.died)
	if err := q.BuryFailed(ctx, j.ID, j.Token, emq.Failure{Class: emq.FailureClassPanic, Worker: "host-b:42", Message: "runtime error: index out of range\ngoroutine 7 [running]:\n\x1b[31m"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestInspectShowFailures: show prints a job's failure history (attempt,
// time, class, worker, the first line of the error) and when it died; JSON
// carries the same; a dead job whose death was not recorded says so.
func TestInspectShowFailures(t *testing.T) {
	s := seedFailures(t)
	info, ok, err := s.q.Get(ctxP(t), s.died)
	if err != nil || !ok || len(info.Failures) != 2 || info.DiedAt.IsZero() {
		t.Fatalf("SDK Get = %+v, %v, %v", info, ok, err)
	}
	code, out, errs := inspectRun(t, s.srv, "show", "-queue", "mail", s.died.String())
	t.Logf("emq inspect show\n%s", out)
	if code != emqcli.ExitOK || errs != "" {
		t.Fatalf("show = %d\n%s%s", code, out, errs)
	}
	died := info.DiedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if l := lineWith(out, "died_at"); !strings.Contains(l, died) {
		t.Errorf("died_at line %q; want %s", l, died)
	}
	for i, want := range [][]string{
		{"1", info.Failures[0].At.UTC().Format("2006-01-02T15:04:05.000Z07:00"), string(emq.FailureClassTimeout), "host-a:41", "deadline exceeded"},
		{"2", died, string(emq.FailureClassPanic), "host-b:42", "runtime error: index out of range"},
	} {
		l := lineWith(out, want[3])
		for _, w := range want {
			if !strings.Contains(l, w) {
				t.Errorf("history line %d %q lacks %q", i+1, l, w)
			}
		}
	}
	if strings.Contains(out, "goroutine 7") || strings.Contains(out, "\x1b") {
		t.Errorf("show printed more than the first line of an error:\n%s", out)
	}

	_, out, _ = inspectRun(t, s.srv, "show", "-queue", "mail", s.unrecorded.String())
	if l := lineWith(out, "died_at"); !strings.Contains(l, "not recorded") {
		t.Errorf("a dead job without a record: died_at line %q; want not recorded\n%s", l, out)
	}
	_, out, _ = inspectRun(t, s.srv, "show", "-queue", "mail", s.untroubled.String())
	if lineWith(out, "died_at") != "" || !strings.Contains(lineWith(out, "history"), "none recorded") {
		t.Errorf("a pending job without a record:\n%s", out)
	}

	_, out, _ = inspectRun(t, s.srv, "show", "-queue", "mail", "-format", "json", s.died.String())
	var m struct {
		DiedAt  time.Time `json:"died_at"`
		History []struct {
			Attempt int64     `json:"attempt"`
			At      time.Time `json:"at"`
			Class   string    `json:"class"`
			Worker  string    `json:"worker"`
			Error   string    `json:"error"`
		} `json:"history"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !m.DiedAt.Equal(info.DiedAt) || len(m.History) != 2 || m.History[1].Class != string(emq.FailureClassPanic) || m.History[1].Error != info.Failures[1].Message || m.History[0].Attempt != 1 {
		t.Errorf("show -format json = %+v; SDK Get %+v", m, info)
	}
}

// TestInspectBrowseDeadFailures: a page of the dead set shows each job's
// last recorded failure, class and first line, or that none was recorded.
func TestInspectBrowseDeadFailures(t *testing.T) {
	s := seedFailures(t)
	code, out, errs := inspectRun(t, s.srv, "browse", "-queue", "mail", "-set", "dead")
	t.Logf("emq inspect browse -set dead\n%s", out)
	if code != emqcli.ExitOK || errs != "" {
		t.Fatalf("browse = %d\n%s%s", code, out, errs)
	}
	if l := lineWith(out, s.died.String()); !strings.Contains(l, string(emq.FailureClassPanic)+": runtime error: index out of range") || strings.Contains(l, "goroutine") {
		t.Errorf("the dead job's line %q; want its last failure's class and first line", l)
	}
	if l := lineWith(out, s.unrecorded.String()); !strings.Contains(l, "(not recorded)") {
		t.Errorf("the unrecorded dead job's line %q; want (not recorded)", l)
	}
	_, out, _ = inspectRun(t, s.srv, "browse", "-queue", "mail", "-set", "dead", "-format", "json")
	var page struct {
		Entries []struct {
			ID          string `json:"id"`
			LastFailure *struct {
				Class string `json:"class"`
				Error string `json:"error"`
			} `json:"last_failure"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &page); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	found := 0
	for _, en := range page.Entries {
		switch en.ID {
		case s.died.String():
			if en.LastFailure == nil || en.LastFailure.Class != string(emq.FailureClassPanic) {
				t.Errorf("json entry of the dead job: %+v", en)
			}
			found++
		case s.unrecorded.String():
			if en.LastFailure != nil {
				t.Errorf("json entry of the unrecorded dead job: %+v", en.LastFailure)
			}
			found++
		}
	}
	if found != 2 {
		t.Errorf("json page %s; want both dead jobs", out)
	}
	// The pending set shows no failure column.
	_, out, _ = inspectRun(t, s.srv, "browse", "-queue", "mail", "-set", "pending")
	if strings.Contains(out, "last_failure") {
		t.Errorf("a pending page shows failures:\n%s", out)
	}
}

// FirstLine cuts at the first line break and quotes what a terminal must
// not get raw.
func TestFirstLine(t *testing.T) {
	for in, want := range map[string]string{
		"boom":                   "boom",
		"boom\nstack":            "boom",
		"boom\r\nstack":          "boom",
		"\x1b[31mred":            `"\x1b[31mred"`,
		"abc\u202edcba":          `"abc\u202edcba"`,
		strings.Repeat("é", 300): strings.Repeat("é", 200) + "…",
	} {
		if got := emqcli.FirstLine(in); got != want {
			t.Errorf("FirstLine(%q) = %q; want %q", in, got, want)
		}
	}
}
