package decode

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Text timestamps accepted for the time column (and for any other timestamp
// column fed from text) follow RFC 3339 section 5.6 with the ISO 8601
// relaxations below (docs/ingest.md, "What loads and what is refused"):
//
//	YYYY-MM-DD(T|t| )HH:MM:SS[.f{1,9}][Z|z|+hh:mm|-hh:mm|+hhmm|-hhmm|+hh|-hh]
//	YYYY-MM-DD                      (a bare date: midnight, see below)
//
// A value without an offset is a wall-clock time in DecodeOptions.AssumeLocation
// (UTC when nil). A bare date is accepted and means midnight in that same
// location; this is a deliberate convenience for daily files. Leading and
// trailing spaces are ignored, leap seconds (:60) are rejected, and digits
// beyond microseconds are truncated when the target unit is microseconds.

// timeExample is quoted in every "cannot parse as a timestamp" message.
const timeExample = "2026-01-05T10:00:00Z"

// textTime is a parsed text timestamp, before a zone is applied.
type textTime struct {
	year, month, day, hour, min, sec, nsec int
	hasOffset                              bool
	offset                                 int // seconds east of UTC
}

// parseTextTime parses the forms described above. ok is false when s is not
// one of them or holds an out-of-range field.
func parseTextTime(s string) (t textTime, ok bool) {
	s = strings.TrimSpace(s)
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return t, false
	}
	var good bool
	if t.year, good = digits(s[0:4]); !good {
		return t, false
	}
	if t.month, good = digits(s[5:7]); !good {
		return t, false
	}
	if t.day, good = digits(s[8:10]); !good {
		return t, false
	}
	if t.month < 1 || t.month > 12 || t.day < 1 || t.day > daysIn(t.year, t.month) {
		return t, false
	}
	if len(s) == 10 {
		return t, true
	}
	if c := s[10]; c != 'T' && c != 't' && c != ' ' {
		return t, false
	}
	rest := s[11:]
	var n int
	if t.hour, t.min, t.sec, t.nsec, n, good = parseClock(rest); !good {
		return t, false
	}
	rest = rest[n:]
	if rest == "" {
		return t, true
	}
	switch rest[0] {
	case 'Z', 'z':
		if len(rest) != 1 {
			return t, false
		}
		t.hasOffset = true
		return t, true
	case '+', '-':
		sign := 1
		if rest[0] == '-' {
			sign = -1
		}
		off := rest[1:]
		var hh, mm int
		switch {
		case len(off) == 2:
			hh, good = digits(off)
		case len(off) == 4:
			var g2 bool
			hh, good = digits(off[:2])
			mm, g2 = digits(off[2:])
			good = good && g2
		case len(off) == 5 && off[2] == ':':
			var g2 bool
			hh, good = digits(off[:2])
			mm, g2 = digits(off[3:])
			good = good && g2
		default:
			return t, false
		}
		if !good || hh > 23 || mm > 59 {
			return t, false
		}
		t.hasOffset = true
		t.offset = sign * (hh*3600 + mm*60)
		return t, true
	}
	return t, false
}

// parseClock parses HH:MM:SS[.f{1,9}] at the start of s and returns how many
// bytes it used.
func parseClock(s string) (h, m, sec, nsec, n int, ok bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, 0, 0, 0, 0, false
	}
	var g1, g2, g3 bool
	h, g1 = digits(s[0:2])
	m, g2 = digits(s[3:5])
	sec, g3 = digits(s[6:8])
	if !g1 || !g2 || !g3 || h > 23 || m > 59 || sec > 59 {
		return 0, 0, 0, 0, 0, false
	}
	n = 8
	if n < len(s) && s[n] == '.' {
		j := n + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		nd := j - n - 1
		if nd < 1 || nd > 9 {
			return 0, 0, 0, 0, 0, false
		}
		frac, _ := strconv.Atoi(s[n+1 : j])
		for i := nd; i < 9; i++ {
			frac *= 10
		}
		nsec = frac
		n = j
	}
	return h, m, sec, nsec, n, true
}

// digits parses an all-ASCII-digit string.
func digits(s string) (int, bool) {
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, len(s) > 0
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// instant resolves t to an absolute time: its own offset when it has one,
// otherwise loc (UTC when nil). A wall-clock time that does not exist in
// loc or occurs twice there is refused (wallIssue).
func (t textTime) instant(loc *time.Location) (time.Time, *wallIssue) {
	if t.hasOffset {
		return time.Date(t.year, time.Month(t.month), t.day, t.hour, t.min, t.sec, t.nsec, time.UTC).
			Add(-time.Duration(t.offset) * time.Second), nil
	}
	return wallInstant(t.year, t.month, t.day, t.hour, t.min, t.sec, t.nsec, loc)
}

// wallIssue describes a wall-clock time that a zone skips (gap) or repeats.
// before and after are the UTC offsets in seconds around the change.
type wallIssue struct {
	gap           bool
	before, after int
}

// wallInstant returns the instant of a wall-clock time in loc (UTC when
// nil). Where the zone's offset changes, a wall-clock time may not exist
// (the clocks skip it when daylight saving time starts) or exist twice
// (when it ends); time.Date would pick one instant silently, so both are
// reported as a wallIssue instead.
func wallInstant(year, month, day, hour, min, sec, nsec int, loc *time.Location) (time.Time, *wallIssue) {
	if loc == nil || loc == time.UTC {
		return time.Date(year, time.Month(month), day, hour, min, sec, nsec, time.UTC), nil
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, nsec, loc)
	wall := time.Date(year, time.Month(month), day, hour, min, sec, nsec, time.UTC)
	same := func(u time.Time) bool {
		y, mo, d := u.Date()
		h, mi, s := u.Clock()
		return y == year && int(mo) == month && d == day && h == hour && mi == min && s == sec
	}
	if !same(t) {
		_, before := wall.Add(-12 * time.Hour).In(loc).Zone()
		_, after := wall.Add(12 * time.Hour).In(loc).Zone()
		return t, &wallIssue{gap: true, before: before, after: after}
	}
	_, off := t.Zone()
	start, end := t.ZoneBounds()
	// The same wall-clock time under the offset of the neighbouring zone
	// period, if it falls into that period, is a second instant.
	if !start.IsZero() {
		if _, prev := start.Add(-time.Nanosecond).Zone(); prev != off {
			u := wall.Add(-time.Duration(prev) * time.Second)
			if u.Before(start) && same(u.In(loc)) {
				return t, &wallIssue{before: prev, after: off}
			}
		}
	}
	if !end.IsZero() {
		if _, next := end.Zone(); next != off {
			u := wall.Add(-time.Duration(next) * time.Second)
			if !u.Before(end) && same(u.In(loc)) {
				return t, &wallIssue{before: off, after: next}
			}
		}
	}
	return t, nil
}

// localTimeReason is the reason for a wall-clock time value (as written)
// that loc skips or repeats, with the fix.
func localTimeReason(value string, loc *time.Location, w *wallIssue) string {
	fix := "or choose an --assume-timezone without daylight saving time (" + fixedZones(min(w.before, w.after)) + ")"
	if w.gap {
		return fmt.Sprintf("local time %s does not exist in %s: the clocks skip it when the offset changes from %s to %s; write times with their UTC offset, %s",
			quoteValue(value), loc, formatOffset(w.before), formatOffset(w.after), fix)
	}
	wall := strings.Replace(strings.TrimSpace(value), " ", "T", 1)
	return fmt.Sprintf("local time %s is ambiguous in %s: it occurs twice, at offset %s and again at %s; write it with its UTC offset (%s%s or %s%s), %s",
		quoteValue(value), loc, formatOffset(w.before), formatOffset(w.after), wall, formatOffset(w.before), wall, formatOffset(w.after), fix)
}

// formatOffset renders seconds east of UTC as +hh:mm.
func formatOffset(off int) string {
	sign := '+'
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%c%02d:%02d", sign, off/3600, off/60%60)
}

// fixedZones names zones without daylight saving time: UTC, and the IANA
// fixed-offset zone for off when it is whole hours (Etc/GMT-1 is +01:00:
// POSIX signs are inverted).
func fixedZones(off int) string {
	if off == 0 || off%3600 != 0 {
		return "UTC"
	}
	return fmt.Sprintf("UTC, or Etc/GMT%+d for a fixed %s", -off/3600, formatOffset(off))
}

// timeToUnit converts an absolute time to a count of unit since the Unix
// epoch, flooring sub-unit digits. ok is false on int64 overflow (only
// possible for nanoseconds outside 1677..2262).
func timeToUnit(t time.Time, unit arrow.TimeUnit) (int64, bool) {
	sec, nsec := t.Unix(), int64(t.Nanosecond())
	per := int64(time.Second / unit.Multiplier())
	if sec > math.MaxInt64/per-1 || sec < math.MinInt64/per+1 {
		return 0, false
	}
	return sec*per + nsec/int64(unit.Multiplier()), true
}

// convertUnit converts v from one time unit to another: multiplying with an
// overflow check, or flooring when the target is coarser.
func convertUnit(v int64, from, to arrow.TimeUnit) (int64, bool) {
	f, t := int64(from.Multiplier()), int64(to.Multiplier())
	switch {
	case f == t:
		return v, true
	case f > t:
		k := f / t
		if v > math.MaxInt64/k || v < math.MinInt64/k {
			return 0, false
		}
		return v * k, true
	default:
		k := t / f
		q := v / k
		if v%k != 0 && v < 0 {
			q--
		}
		return q, true
	}
}

// floatEpochToUnit converts a fractional epoch value in unit from to unit to,
// rounding to the nearest target unit (binary floats rarely hold exact
// decimal fractions, so rounding rather than truncating is intended here).
func floatEpochToUnit(v float64, from, to arrow.TimeUnit) (int64, bool) {
	x := math.Round(v * float64(from.Multiplier()) / float64(to.Multiplier()))
	if math.IsNaN(x) || x >= math.MaxInt64 || x <= math.MinInt64 {
		return 0, false
	}
	return int64(x), true
}

// parseTimeUnit maps DecodeOptions.TimeUnit to an Arrow unit; set is false
// for "".
func parseTimeUnit(s string) (u arrow.TimeUnit, set bool, ok bool) {
	switch s {
	case "":
		return 0, false, true
	case "s":
		return arrow.Second, true, true
	case "ms":
		return arrow.Millisecond, true, true
	case "us":
		return arrow.Microsecond, true, true
	case "ns":
		return arrow.Nanosecond, true, true
	}
	return 0, false, false
}

// timeConv turns text or epoch numbers into values of one Arrow timestamp
// type, following the time column rules above.
type timeConv struct {
	unit      arrow.TimeUnit // target unit
	naive     bool           // target has no time zone (Iceberg "timestamp")
	loc       *time.Location // zone for text without offset into a zoned target
	epoch     arrow.TimeUnit // unit of numeric epoch values
	epochSet  bool           // numeric epoch values allowed
	hintEpoch bool           // mention the time unit option when a number fails
}

// fromText parses one text value. Numbers are tried as epoch values only
// after the text forms failed and only when an epoch unit is set; they
// follow the text number rules (numbers.go): a decimal fraction is exact
// and its digits beyond the target unit are truncated, as in RFC 3339 text.
func (c *timeConv) fromText(s string) (int64, string, bool) {
	if tt, ok := parseTextTime(s); ok {
		loc := c.loc
		if c.naive {
			// Iceberg "timestamp" (no zone) stores wall-clock time: keep text
			// without offset as written; text with an offset becomes UTC.
			loc = time.UTC
		}
		inst, issue := tt.instant(loc)
		if issue != nil {
			return 0, localTimeReason(s, loc, issue), false
		}
		v, ok := timeToUnit(inst, c.unit)
		if !ok {
			return 0, "timestamp " + quoteValue(s) + " is out of range", false
		}
		return v, "", true
	}
	ts := strings.TrimSpace(s)
	_, numProblem := parseFloatText(ts, 64)
	if c.epochSet {
		if i, err := strconv.ParseInt(ts, 10, 64); err == nil {
			if v, ok := convertUnit(i, c.epoch, c.unit); ok {
				return v, "", true
			}
			return 0, "epoch value " + quoteValue(s) + " is out of range", false
		}
		if v, problem := decimalEpoch(ts, c.epoch, c.unit); problem == "" {
			return v, "", true
		} else if problem != notNumber {
			return 0, "cannot parse " + quoteValue(s) + " as an epoch time (" + problem + ")", false
		}
	}
	reason := "cannot parse " + quoteValue(s) + " as a timestamp (expected RFC 3339 such as " + timeExample + ")"
	if problem := rfc3339Beyond(ts); problem != "" {
		reason = "cannot parse " + quoteValue(s) + " as a timestamp (" + problem + ")"
	}
	if !c.epochSet && c.hintEpoch && numProblem == "" && hasDigit(ts) {
		reason += "; numeric epoch times need a time unit (--time-unit s, ms, us or ns)"
	}
	return 0, reason, false
}

// decimalEpoch converts decimal text (a fraction or an exponent: the text
// number rules) in unit from to a count of unit to, exactly, truncating
// toward the past. problem follows parseFloatText; NaN and infinities are
// not times (notNumber), values beyond int64 are "out of range".
func decimalEpoch(t string, from, to arrow.TimeUnit) (int64, string) {
	f, problem := parseFloatText(t, 64)
	if problem != "" {
		return 0, problem
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, notNumber
	}
	// t is plain decimal notation here (parseFloatText checked its bytes),
	// with an exponent bounded by the double range.
	r, ok := new(big.Rat).SetString(t)
	if !ok {
		return 0, notNumber
	}
	r.Mul(r, new(big.Rat).SetFrac64(int64(from.Multiplier()), int64(to.Multiplier())))
	q := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive denominator
	if !q.IsInt64() {
		return 0, "out of range"
	}
	return q.Int64(), ""
}

func hasDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789")
}

// parseDate parses YYYY-MM-DD into days since the Unix epoch (Arrow date32).
func parseDate(s string) (int32, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 10 {
		return 0, false
	}
	tt, ok := parseTextTime(s)
	if !ok {
		return 0, false
	}
	sec := time.Date(tt.year, time.Month(tt.month), tt.day, 0, 0, 0, 0, time.UTC).Unix()
	return int32(floorDiv(sec, 86400)), true
}

// parseTimeOfDay parses HH:MM:SS[.f{1,9}] into microseconds since midnight
// (Arrow time64[us], Iceberg "time").
func parseTimeOfDay(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	h, m, sec, nsec, n, ok := parseClock(s)
	if !ok || n != len(s) {
		return 0, false
	}
	return (int64(h)*3600+int64(m)*60+int64(sec))*1_000_000 + int64(nsec)/1000, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// rfc3339Shape matches text of RFC 3339's shape: date, time with seconds,
// an optional fraction of any length and an optional offset; the groups
// are the seconds and the fraction's digits.
var rfc3339Shape = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:(\d{2})(?:\.(\d+))?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)?$`)

// rfc3339Beyond says why text of RFC 3339's shape that parseTextTime
// refused is refused, where RFC 3339 itself allows it: a fraction of more
// than 9 digits, a leap second; "" for other text.
func rfc3339Beyond(ts string) string {
	m := rfc3339Shape.FindStringSubmatch(ts)
	switch {
	case m == nil:
		return ""
	case len(m[2]) > 9:
		return fmt.Sprintf("a fraction of %d digits: at most 9, nanoseconds, are read", len(m[2]))
	case m[1] == "60":
		return "a leap second (second 60), which timestamps cannot hold: write second 59 or the next minute's 00"
	}
	return ""
}
