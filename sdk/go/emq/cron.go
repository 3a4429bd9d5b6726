package emq

import (
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // IANA zones on machines without a zone database
)

// Cron expressions of job schedulers (echomq 2.6.0). Every SDK evaluates
// them alike, the server never does (Lua has no zone database):
// conformance/vectors/schedules.json is the oracle.

// CronError is the refusal of a cron expression or its time zone
// (ParseCron, and UpsertScheduler before anything is sent). It matches
// ErrArgument under errors.Is.
type CronError struct {
	Expr   string // the expression as given
	TZ     string // the time zone as given
	Reason string // what is wrong with it
	zone   bool   // the zone is refused, not the expression
}

// Error says what is wrong.
func (e *CronError) Error() string {
	return fmt.Sprintf("emq: invalid argument: cron %q in zone %q: %s", e.Expr, e.TZ, e.Reason)
}

// Unwrap returns ErrArgument.
func (e *CronError) Unwrap() error { return ErrArgument }

// CronSchedule is a parsed cron expression in a time zone: its slots are
// the whole seconds whose wall time in the zone matches the expression.
// A wall time the zone repeats (the hour a daylight-saving change sets the
// clocks back) is a slot once, at its first occurrence; a wall time the
// zone skips (the hour it sets them forward) is no slot. It is safe for
// concurrent use.
type CronSchedule struct {
	expr string
	tz   string
	loc  *time.Location

	sec, min uint64 // bit n: second (minute) n
	hour     uint32 // bit n: hour n
	dom      uint32 // bit n: day of the month n (1 to 31)
	month    uint16 // bit n: month n (1 to 12)
	dow      uint8  // bit n: weekday n (0 Sunday to 6 Saturday)
	// either reports that the day of the month and the weekday fields
	// both restrict (neither starts with *): a day matches either.
	either bool
}

// cronMacros are the @ words ParseCron takes for a whole expression.
var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// cronField is the range and the names of one field.
type cronField struct {
	name     string
	min, max int
	names    []string // names[i] is value i (month: JAN is 1)
}

var (
	monthNames = []string{"", "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dowNames   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}

	fieldSecond = cronField{name: "second", min: 0, max: 59}
	fieldMinute = cronField{name: "minute", min: 0, max: 59}
	fieldHour   = cronField{name: "hour", min: 0, max: 23}
	fieldDom    = cronField{name: "day of month", min: 1, max: 31}
	fieldMonth  = cronField{name: "month", min: 1, max: 12, names: monthNames}
	fieldDow    = cronField{name: "day of week", min: 0, max: 7, names: dowNames}
)

// ParseCron parses a cron expression in the time zone tz (echomq 2.6.0):
// five fields "minute hour day-of-month month day-of-week" (at second 0),
// or six with the seconds first, separated by spaces or tabs. A field is
// a comma list of *, N or N-M, each optionally followed by /S (N/S is
// N up to the field's maximum); months and weekdays also take their
// three-letter English names, and weekday 7 is Sunday like 0. When
// neither the day-of-month nor the weekday field starts with *, a day
// matches either; otherwise both. The macros @yearly (@annually),
// @monthly, @weekly, @daily (@midnight) and @hourly stand for their
// expressions. tz is an IANA zone name; "" is UTC, and "Local" is refused
// (every process of a fleet must read the same slots).
//
// Anything else is refused with a *CronError (matching ErrArgument): a
// value out of range, a range whose end is below its start, a step below 1,
// an empty item, ?, L, W, #, other letters, another field count, another
// @ word, an unknown zone.
func ParseCron(expr, tz string) (*CronSchedule, error) {
	refuse := func(format string, args ...any) error {
		return &CronError{Expr: expr, TZ: tz, Reason: fmt.Sprintf(format, args...)}
	}
	loc, err := loadZone(tz)
	if err != nil {
		return nil, &CronError{Expr: expr, TZ: tz, Reason: err.Error(), zone: true}
	}
	text := strings.Trim(expr, " \t\r\n\v\f")
	if strings.HasPrefix(text, "@") {
		m, ok := cronMacros[strings.ToLower(text)]
		if !ok {
			return nil, refuse("%q is not a macro (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)", text)
		}
		text = m
	}
	fields := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' })
	specs := []cronField{fieldMinute, fieldHour, fieldDom, fieldMonth, fieldDow}
	switch len(fields) {
	case 5:
		fields = append([]string{"0"}, fields...)
	case 6:
	default:
		return nil, refuse("%d fields; want 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)", len(fields))
	}
	specs = append([]cronField{fieldSecond}, specs...)
	var set [6]uint64
	for i, f := range fields {
		if set[i], err = specs[i].parse(f); err != nil {
			return nil, refuse("%s field %q: %v", specs[i].name, f, err)
		}
	}
	dow := set[5]
	if dow&(1<<7) != 0 {
		dow |= 1 // 7 is Sunday
	}
	zone := tz
	if zone == "" {
		zone = time.UTC.String()
	}
	return &CronSchedule{expr: expr, tz: zone, loc: loc,
		sec: set[0], min: set[1], hour: uint32(set[2]), dom: uint32(set[3]), month: uint16(set[4]), dow: uint8(dow & 0x7f),
		either: !strings.HasPrefix(fields[3], "*") && !strings.HasPrefix(fields[5], "*")}, nil
}

// parse reads one field into a bit set of its values.
func (f cronField) parse(text string) (uint64, error) {
	var set uint64
	for _, item := range strings.Split(text, ",") {
		if item == "" {
			return 0, fmt.Errorf("an empty item")
		}
		rng, stepText, stepped := strings.Cut(item, "/")
		step := 1
		if stepped {
			s, ok := decimal(stepText)
			if !ok || s < 1 {
				return 0, fmt.Errorf("step %q is not a decimal number of 1 or more", stepText)
			}
			step = s
		}
		var lo, hi int
		if rng == "*" {
			lo, hi = f.min, f.max
		} else {
			loText, hiText, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = f.value(loText); err != nil {
				return 0, err
			}
			hi = lo
			switch {
			case isRange:
				if hi, err = f.value(hiText); err != nil {
					return 0, err
				}
				if hi < lo {
					return 0, fmt.Errorf("range %q ends below its start", rng)
				}
			case stepped:
				hi = f.max // N/S is N-max/S
			}
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value reads one value of the field: decimal digits, or a name.
func (f cronField) value(text string) (int, error) {
	if v, ok := decimal(text); ok {
		if v < f.min || v > f.max {
			return 0, fmt.Errorf("%s is out of range (%d to %d)", text, f.min, f.max)
		}
		return v, nil
	}
	if len(text) == 3 {
		for i, n := range f.names {
			if n != "" && strings.EqualFold(n, text) {
				return i, nil
			}
		}
	}
	if text == "" {
		return 0, fmt.Errorf("a missing value")
	}
	return 0, fmt.Errorf("%q is not a value of the field", text)
}

// decimal reads a non-empty string of ASCII digits (leading zeros fine);
// a number too large for any field reads as 1<<20.
func decimal(text string) (int, bool) {
	if text == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v < 1<<20 {
			v = v*10 + int(c-'0')
		}
	}
	return min(v, 1<<20), true
}

// zones caches the zones loaded by name.
var zones sync.Map // string -> *time.Location

// loadZone loads an IANA zone; "" is UTC and "Local" is refused.
func loadZone(tz string) (*time.Location, error) {
	switch tz {
	case "":
		return time.UTC, nil
	case "Local":
		return nil, fmt.Errorf("the zone Local is this machine's, not a fleet's: name an IANA zone")
	}
	if l, ok := zones.Load(tz); ok {
		return l.(*time.Location), nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", tz)
	}
	zones.Store(tz, loc)
	return loc, nil
}

// String returns the expression as given.
func (c *CronSchedule) String() string { return c.expr }

// Location returns the expression's time zone (UTC for "").
func (c *CronSchedule) Location() *time.Location { return c.loc }

// cronSearchDays bounds how far past its argument next searches: a
// schedule without a slot within it has ended (0 0 30 2 *); it holds the
// longest gap between leap days (0 0 29 2 *).
const cronSearchDays = 8 * 366

// Next returns the first slot strictly after after, or the zero time
// when there is none within 8·366 days (the schedule has ended).
func (c *CronSchedule) Next(after time.Time) time.Time {
	return timeOfMS(c.nextAfter(after.UnixMilli()))
}

// nextAfter is Next on Unix milliseconds: the smallest slot above x, 0
// when none is within cronSearchDays of x.
func (c *CronSchedule) nextAfter(x int64) int64 {
	limit := x + cronSearchDays*86400*1000
	from := floorDiv(x, 1000) + 1 // the first whole second above x
	w := from + offsetAt(c.loc, from)
	wmax := floorDiv(limit, 1000) + 2*86400 // no wall time past it is within limit
	for {
		var ok bool
		if w, ok = c.nextWall(w, wmax); !ok {
			return 0
		}
		if t, ok := firstOccurrence(c.loc, w); ok && t >= from {
			if t*1000 > limit {
				return 0
			}
			return t * 1000
		}
		w++ // a wall time the zone skips, or one that occurred before from
	}
}

// offsetAt is the zone's offset from UTC at the Unix second t.
func offsetAt(loc *time.Location, t int64) int64 {
	_, off := time.Unix(t, 0).In(loc).Zone()
	return int64(off)
}

// maxZoneOffset bounds the offset of any zone ever (tzdb's largest local
// mean times are under 16 hours).
const maxZoneOffset = 26 * 3600

// firstOccurrence returns the first Unix second whose wall time in loc is
// w (w counts wall seconds as if the wall clock were UTC), and false when
// the zone skips that wall time.
func firstOccurrence(loc *time.Location, w int64) (int64, bool) {
	if loc == time.UTC {
		return w, true
	}
	for a := w - maxZoneOffset; ; {
		t := time.Unix(a, 0).In(loc)
		_, off := t.Zone()
		start, end := t.ZoneBounds()
		cand := w - int64(off)
		if (start.IsZero() || cand >= start.Unix()) && (end.IsZero() || cand < end.Unix()) {
			return cand, true
		}
		if end.IsZero() || end.Unix() > w+maxZoneOffset {
			return 0, false
		}
		a = end.Unix()
	}
}

// nextWall returns the first wall second at or after w whose fields
// match, false when it would be past wmax.
func (c *CronSchedule) nextWall(w, wmax int64) (int64, bool) {
	days := floorDiv(w, 86400)
	rem := w - days*86400
	y, mo, d := civil(days)
	h, mi, s := int(rem/3600), int(rem/60%60), int(rem%60)
	// normalize carries an overflowing field (day 32, hour 24, ...) into
	// the fields above it.
	normalize := func() {
		t := time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC)
		y, mo, d = t.Year(), int(t.Month()), t.Day()
		h, mi, s = t.Clock()
	}
	for {
		if daysOf(y, mo, d)*86400 > wmax {
			return 0, false
		}
		if c.month&(1<<mo) == 0 {
			if n := nextBit(uint64(c.month), mo, 12); n >= 0 {
				mo = n
			} else {
				y, mo = y+1, firstBit(uint64(c.month))
			}
			d, h, mi, s = 1, 0, 0, 0
			continue
		}
		if !c.dayMatches(y, mo, d) {
			d, h, mi, s = d+1, 0, 0, 0
			normalize()
			continue
		}
		n := nextBit(uint64(c.hour), h, 23)
		if n < 0 {
			d, h, mi, s = d+1, 0, 0, 0
			normalize()
			continue
		}
		if n != h {
			h, mi, s = n, 0, 0
		}
		if n = nextBit(c.min, mi, 59); n < 0 {
			h, mi, s = h+1, 0, 0
			normalize()
			continue
		}
		if n != mi {
			mi, s = n, 0
		}
		if n = nextBit(c.sec, s, 59); n < 0 {
			mi, s = mi+1, 0
			normalize()
			continue
		}
		s = n
		wall := daysOf(y, mo, d)*86400 + int64(h*3600+mi*60+s)
		return wall, wall <= wmax
	}
}

// dayMatches applies the day rule to a date.
func (c *CronSchedule) dayMatches(y, mo, d int) bool {
	if d > daysIn(y, mo) {
		return false
	}
	wd := int((daysOf(y, mo, d)%7 + 11) % 7) // 1970-01-01 was a Thursday (4)
	dom, dow := c.dom&(1<<d) != 0, c.dow&(1<<wd) != 0
	if c.either {
		return dom || dow
	}
	return dom && dow
}

// nextBit returns the lowest set bit of set at or above from and at most
// max, or -1.
func nextBit(set uint64, from, max int) int {
	if from > max {
		return -1
	}
	rest := set >> from << from
	if rest == 0 {
		return -1
	}
	if n := bits.TrailingZeros64(rest); n <= max {
		return n
	}
	return -1
}

// firstBit is the lowest set bit of a set that has one.
func firstBit(set uint64) int { return bits.TrailingZeros64(set) }

// daysIn is the number of days of a month.
func daysIn(y, mo int) int {
	switch mo {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysOf is the number of days from 1970-01-01 to a proleptic Gregorian
// date (H. Hinnant's days_from_civil).
func daysOf(y, mo, d int) int64 {
	if mo <= 2 {
		y--
	}
	era := floorDiv(int64(y), 400)
	yoe := int64(y) - era*400
	m := int64(mo)
	if m > 2 {
		m -= 3
	} else {
		m += 9
	}
	doy := (153*m+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civil is daysOf's inverse.
func civil(days int64) (y, mo, d int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		mo = int(mp + 3)
	} else {
		mo = int(mp - 9)
	}
	y = int(yoe + era*400)
	if mo <= 2 {
		y++
	}
	return y, mo, d
}

// floorDiv is a / b rounded toward negative infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// timeOfMS is the time of Unix milliseconds, the zero time for 0.
func timeOfMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// msOfTime is the Unix milliseconds of t, 0 for the zero time.
func msOfTime(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
