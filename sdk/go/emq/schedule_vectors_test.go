package emq_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

// scheduleVectors is conformance/vectors/schedules.json, the oracle of
// every SDK's schedules (conformance/vectors/schedules.py writes it).
type scheduleVectors struct {
	Generated string `json:"generated"`
	Cron      []struct {
		Name    string  `json:"name"`
		Expr    string  `json:"expr"`
		TZ      string  `json:"tz"`
		AfterMS int64   `json:"after_ms"`
		NextMS  []int64 `json:"next_ms"`
	} `json:"cron"`
	Interval []struct {
		Name    string  `json:"name"`
		StartMS int64   `json:"start_ms"`
		EveryMS int64   `json:"every_ms"`
		AfterMS int64   `json:"after_ms"`
		NextMS  []int64 `json:"next_ms"`
	} `json:"interval"`
	InvalidCron []struct {
		Expr string `json:"expr"`
		Why  string `json:"why"`
	} `json:"invalid_cron"`
	InvalidTZ []string `json:"invalid_tz"`
	Plans     []struct {
		Name   string `json:"name"`
		Record struct {
			Cron     string `json:"cron"`
			TZ       string `json:"tz"`
			EveryMS  int64  `json:"every_ms"`
			StartMS  int64  `json:"start_ms"`
			Missed   string `json:"missed"`
			Backfill int    `json:"backfill"`
			GraceMS  int64  `json:"grace_ms"`
			NextMS   int64  `json:"next_ms"`
			Paused   bool   `json:"paused"`
		} `json:"record"`
		NowMS     int64 `json:"now_ms"`
		HorizonMS int64 `json:"horizon_ms"`
		Entries   []struct {
			ExpectMS int64 `json:"expect_ms"`
			NextMS   int64 `json:"next_ms"`
			SlotMS   int64 `json:"slot_ms"`
			UntilMS  int64 `json:"until_ms"`
		} `json:"entries"`
	} `json:"plans"`
}

// readScheduleVectors reads the vectors; a missing file fails the test.
func readScheduleVectors(t *testing.T) scheduleVectors {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "conformance", "vectors", "schedules.json"))
	if err != nil {
		t.Fatalf("the schedules vectors (python3 conformance/vectors/schedules.py > conformance/vectors/schedules.json writes them): %v", err)
	}
	var v scheduleVectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cron) == 0 || len(v.Interval) == 0 || len(v.InvalidCron) == 0 || len(v.InvalidTZ) == 0 || len(v.Plans) == 0 {
		t.Fatalf("the schedules vectors lack a section: %d cron, %d interval, %d invalid cron, %d invalid tz, %d plans",
			len(v.Cron), len(v.Interval), len(v.InvalidCron), len(v.InvalidTZ), len(v.Plans))
	}
	return v
}

// msOf is a time in Unix milliseconds, 0 for the zero time.
func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// timeOf is Unix milliseconds as a time, the zero time for 0.
func timeOf(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// The SDK's cron expressions, intervals and plans agree with every vector
// of the oracle: each cron case's chain of next slots (a trailing 0: the
// schedule ended), each interval's, every refused expression and zone
// (a *CronError matching ErrArgument), and every plan's entries.
func TestScheduleVectors(t *testing.T) {
	v := readScheduleVectors(t)
	t.Run("cron", func(t *testing.T) {
		for _, c := range v.Cron {
			cs, err := emq.ParseCron(c.Expr, c.TZ)
			if err != nil {
				t.Errorf("%s: ParseCron(%q, %q): %v", c.Name, c.Expr, c.TZ, err)
				continue
			}
			var got []int64
			x := c.AfterMS
			for range c.NextMS {
				x = msOf(cs.Next(time.UnixMilli(x)))
				got = append(got, x)
				if x == 0 {
					break
				}
			}
			if !slices.Equal(got, c.NextMS) {
				t.Errorf("%s: %q in %q after %d: %v; the oracle says %v", c.Name, c.Expr, c.TZ, c.AfterMS, got, c.NextMS)
			}
		}
	})
	t.Run("interval", func(t *testing.T) {
		for _, c := range v.Interval {
			s := emq.Schedule{Every: time.Duration(c.EveryMS) * time.Millisecond, Start: timeOf(c.StartMS)}
			// NextRuns gives the slots at or after from: after + 1 ms is
			// strictly after after.
			runs, err := emq.NextRuns(s, time.UnixMilli(c.AfterMS+1), len(c.NextMS))
			if err != nil {
				t.Errorf("%s: %v", c.Name, err)
				continue
			}
			got := make([]int64, len(runs))
			for i, r := range runs {
				got[i] = r.UnixMilli()
			}
			if !slices.Equal(got, c.NextMS) {
				t.Errorf("%s: every %d ms from %d after %d: %v; the oracle says %v", c.Name, c.EveryMS, c.StartMS, c.AfterMS, got, c.NextMS)
			}
		}
	})
	t.Run("invalid_cron", func(t *testing.T) {
		for _, c := range v.InvalidCron {
			_, err := emq.ParseCron(c.Expr, "")
			var ce *emq.CronError
			if !errors.Is(err, emq.ErrArgument) || !errors.As(err, &ce) {
				t.Errorf("ParseCron(%q) (%s) = %v; want a *CronError matching ErrArgument", c.Expr, c.Why, err)
			}
		}
	})
	t.Run("invalid_tz", func(t *testing.T) {
		for _, tz := range v.InvalidTZ {
			_, err := emq.ParseCron("* * * * *", tz)
			var ce *emq.CronError
			if !errors.Is(err, emq.ErrArgument) || !errors.As(err, &ce) {
				t.Errorf("ParseCron(valid, %q) = %v; want a *CronError matching ErrArgument", tz, err)
			}
		}
	})
	t.Run("plans", func(t *testing.T) {
		for _, c := range v.Plans {
			r := c.Record
			info := emq.SchedulerInfo{ID: c.Name, Schedule: emq.Schedule{Cron: r.Cron, TZ: r.TZ, Every: time.Duration(r.EveryMS) * time.Millisecond,
				Start: timeOf(r.StartMS)}, Missed: emq.Missed(r.Missed), Backfill: r.Backfill, Grace: time.Duration(r.GraceMS) * time.Millisecond,
				Paused: r.Paused, Next: timeOf(r.NextMS)}
			es, err := emq.PlanScheduler(info, time.UnixMilli(c.NowMS), time.Duration(c.HorizonMS)*time.Millisecond)
			if err != nil {
				t.Errorf("%s: %v", c.Name, err)
				continue
			}
			type entry struct{ expect, next, slot, until int64 }
			got := make([]entry, len(es))
			for i, e := range es {
				if e.Scheduler != c.Name || !e.ID.IsZero() {
					t.Errorf("%s: entry %d names scheduler %q, id %v", c.Name, i, e.Scheduler, e.ID)
				}
				got[i] = entry{msOf(e.Expect), msOf(e.Next), msOf(e.Slot), msOf(e.Until)}
			}
			want := make([]entry, len(c.Entries))
			for i, e := range c.Entries {
				want[i] = entry{e.ExpectMS, e.NextMS, e.SlotMS, e.UntilMS}
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: plan %v; the oracle says %v", c.Name, got, want)
			}
		}
	})
}
