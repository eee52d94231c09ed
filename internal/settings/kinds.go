package settings

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings/quantity"
)

// Kind is how the values of a setting are read: its parser and the
// placeholder --help shows for it. Parse gets a trimmed, non-empty value
// (an empty one means "not set" and is never parsed) and returns an error
// that says what was expected and quotes what it got; a secret kind never
// fails, so no error can quote a secret.
type Kind[T any] struct {
	// Type is the placeholder of the flag in --help ("string", "int",
	// "duration"); for a switch it is "bool" (--flag alone means true).
	Type  string
	Parse func(string) (T, error)
	// Switch makes the flag a boolean switch: --flag means true,
	// --flag=false false.
	Switch bool
	// Combine, when set, lets the flag be given several times: each
	// value is parsed and combined with those before it (Repeated).
	Combine func(before, next T) T
}

// String is free text.
func String() Kind[string] {
	return Kind[string]{Type: "string", Parse: func(s string) (string, error) { return s, nil }}
}

// Checked is free text that check accepts (check's error says what was
// expected), e.g. a location or a gateway name.
func Checked(check func(string) error) Kind[string] {
	return Kind[string]{Type: "string", Parse: func(s string) (string, error) { return s, check(s) }}
}

// Convert is text read by parse into a typed value, e.g. a table name.
func Convert[T any](parse func(string) (T, error)) Kind[T] {
	return Kind[T]{Type: "string", Parse: parse}
}

// Bool is a switch: --flag means true; a variable takes true/false, 1/0
// (strconv.ParseBool).
func Bool() Kind[bool] {
	k := BoolValue()
	k.Type, k.Switch = "bool", true
	return k
}

// BoolValue is a boolean whose flag needs a value (--flag true).
func BoolValue() Kind[bool] {
	return Kind[bool]{Type: "true|false", Parse: func(s string) (bool, error) {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return false, fmt.Errorf("expected true or false, got %q", s)
		}
		return b, nil
	}}
}

// Int is a whole number in [min, max].
func Int(min, max int) Kind[int] {
	want := fmt.Sprintf("a whole number >= %d", min)
	if max < math.MaxInt {
		want = fmt.Sprintf("a whole number from %d to %d", min, max)
	}
	return Kind[int]{Type: "int", Parse: func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < min || n > max {
			return 0, fmt.Errorf("expected %s, got %q", want, s)
		}
		return n, nil
	}}
}

// Duration is an age of at least min (quantity.ParseAge: 90s, 10m, 36h,
// 14d, 2w); example is shown in the error of a value below min.
func Duration(min time.Duration, example string) Kind[time.Duration] {
	return Kind[time.Duration]{Type: "duration", Parse: func(s string) (time.Duration, error) {
		return quantity.AgeAtLeast(s, min, example)
	}}
}

// Positive is the min of a Duration that must be above zero.
const Positive = quantity.Positive

// Since is a point in time: an RFC 3339 time, a date (UTC midnight), or a
// duration before the moment it is read (ParseSince).
func Since(now func() time.Time) Kind[time.Time] {
	return Kind[time.Time]{Type: "string", Parse: func(s string) (time.Time, error) { return ParseSince(s, now()) }}
}

// ParseSince reads an RFC 3339 time, a date (2026-01-05, UTC midnight), or
// an age before now (quantity.ParseAge: 90m, 24h, 7d, 2w).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if d, err := quantity.ParseAge(s); err == nil {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-01-05T10:00:00Z) nor a duration (24h, 7d)", s)
}

// Instant is an RFC 3339 time, nothing else: a bound of rows to change
// must not move with the clock as a duration ago would.
func Instant() Kind[time.Time] {
	return Kind[time.Time]{Type: "time", Parse: func(s string) (time.Time, error) {
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
		if err != nil {
			return time.Time{}, fmt.Errorf("expected an RFC 3339 time such as 2026-01-05T10:00:00Z, got %q", s)
		}
		return t, nil
	}}
}

// ByteSize is a size of at least min bytes (quantity.ParseSize: 512KiB,
// 64MiB, 1GiB, 1GB or 1048576).
func ByteSize(min int64) Kind[int64] {
	return Kind[int64]{Type: "size", Parse: func(s string) (int64, error) { return quantity.SizeAtLeast(s, min) }}
}

// FormatDuration renders d as a setting's default is written: 30s, 10m,
// 1h30m (time.Duration's form without its trailing zero units).
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Enum is one of values.
func Enum(values ...string) Kind[string] {
	return Kind[string]{Type: "string", Parse: func(s string) (string, error) {
		for _, v := range values {
			if s == v {
				return s, nil
			}
		}
		return "", fmt.Errorf("%q is not one of %s", s, strings.Join(values, ", "))
	}}
}

// List is a comma-separated list; blanks around items and empty items are
// dropped.
func List() Kind[[]string] {
	return Kind[[]string]{Type: "string", Parse: func(s string) ([]string, error) {
		var out []string
		for _, v := range strings.Split(s, ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
		return out, nil
	}}
}

// Repeated is a flag given once per item (--set a=1 --set b=2): each value
// is one item, commas and all, checked by check (its error says what was
// expected). placeholder names an item in --help (KEY=VALUE).
func Repeated(placeholder string, check func(string) error) Kind[[]string] {
	return Kind[[]string]{Type: placeholder,
		Parse:   func(s string) ([]string, error) { return []string{s}, check(s) },
		Combine: func(before, next []string) []string { return append(before, next...) }}
}

// RouteRules are PATTERN=TABLE rules (route.Parse): one per flag, or
// several separated by line ends or commas (route.Split, as
// TIMELAKE_ROUTES holds them); the flag may be given several times, its
// rules adding up in order. A rule's options (;NAME=VALUE) must be
// RouteOptions, their values read by the settings' own parsers.
func RouteRules() Kind[route.Routes] {
	return Kind[route.Routes]{Type: "PATTERN=TABLE",
		Parse: func(s string) (route.Routes, error) {
			rs, err := route.Parse(route.Split(s))
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				if err := checkRouteOptions(r); err != nil {
					return nil, err
				}
			}
			return rs, nil
		},
		Combine: func(before, next route.Routes) route.Routes { return append(slices.Clip(before), next...) },
	}
}

// RouteOptions are the settings a route's options may set, by flag name:
// those a table gets when it is created (its contract, its column types,
// its table properties) and those that read its time column
// (docs/routing.md, "Table defaults per route").
var RouteOptions = []string{"time-column", "series-key", "partition", "time-unit", "assume-timezone", "column",
	"evolve", "on-error", "max-bad-rows", "source-column", "load-time-column"}

// routeOption returns the setting of ingest whose flag is name, nil for
// none.
func routeOption(name string) *Spec {
	for _, s := range all {
		if s.Flag == name && s.UsedBy(Ingest) {
			return s
		}
	}
	return nil
}

// checkRouteOptions checks that each option of r names a setting a route
// may set and that its value reads as the setting's flag would; errors
// name the rule and the option.
func checkRouteOptions(r route.Route) error {
	for _, o := range r.Options {
		s := routeOption(o.Name)
		switch {
		case s == nil:
			return fmt.Errorf("route %q: unknown option %q: a route takes %s", r, o.Name, strings.Join(RouteOptions, ", "))
		case !slices.Contains(RouteOptions, o.Name):
			return fmt.Errorf("route %q: option %q is a setting of the whole run, not of a route's tables: a route takes %s", r, o.Name, strings.Join(RouteOptions, ", "))
		}
		if err := s.validate(o.Value); err != nil {
			return fmt.Errorf("route %q: option %q: %w", r, o.Name, err)
		}
	}
	return nil
}

// Zone is an IANA time zone name (Europe/Berlin, UTC), from the system's
// zone database or the one built into the binary.
func Zone() Kind[*time.Location] {
	return Kind[*time.Location]{Type: "string", Parse: decode.ParseZone}
}

// ColumnTypes is a list of NAME:TYPE items (Iceberg primitive type names,
// decode.ParseColumnType), separated by commas outside parentheses so that
// decimal(9,2) stays one type; the flag may be given several times. A name
// given twice in one value is an error; across flags the last one wins.
func ColumnTypes() Kind[map[string]arrow.DataType] {
	return Kind[map[string]arrow.DataType]{Type: "NAME:TYPE",
		Parse: decode.ParseColumnTypes,
		Combine: func(before, next map[string]arrow.DataType) map[string]arrow.DataType {
			out := maps.Clone(before)
			if out == nil {
				out = map[string]arrow.DataType{}
			}
			maps.Copy(out, next)
			return out
		},
	}
}

// granularity reads a partition granularity: hour, day or month, any case;
// "" is day. It is the rule of lake.ParseGranularity, which reads the
// table's timelake.chunk (a test of the ingest command compares them).
func granularity(s string) (string, error) {
	switch g := strings.ToLower(strings.TrimSpace(s)); g {
	case "":
		return "day", nil
	case "hour", "day", "month":
		return g, nil
	}
	return "", fmt.Errorf("invalid partition granularity %q (expected hour, day or month)", s)
}

// Delimiter is one character that separates CSV fields (not a quote or a
// line end), or the word tab.
func Delimiter() Kind[rune] {
	return Kind[rune]{Type: "string", Parse: decode.ParseDelimiter}
}
