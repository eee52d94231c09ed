// Package quantity is the one grammar of ages and sizes in timelake: every
// duration and size of the settings registry (--lease-ttl, --older-than,
// --memory-budget, ...) and every one of a table property
// (timelake.snapshot-retention, timelake.target-file-size, ...) is read here,
// so a value that one place accepts is accepted by all (docs/configuration.md,
// "Values").
//
// It is a package of its own, with no dependency of timelake, so that the
// registry (internal/settings) and the table properties (internal/lake) can
// both use it.
package quantity

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AgeExamples are the forms of an age, for messages.
const AgeExamples = "90s, 15m, 36h, 14d or 2w"

// SizeExamples are the forms of a size, for messages.
const SizeExamples = "512KiB, 64MiB, 1GiB, 1GB or 1048576"

// ParseAge reads an age: a Go duration (90s, 15m, 1h30m, 1.5h) or a number
// of days or weeks (14d, 1.5d, 2w; d = 24h, w = 7d), blanks around it
// ignored. Errors: empty, not such a duration, or negative, each saying so.
func ParseAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration (expected e.g. %s)", AgeExamples)
	}
	d, ok := parseDaysWeeks(s)
	if !ok {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
				return 0, fmt.Errorf("%q has no unit (expected e.g. %s)", s, AgeExamples)
			}
			return 0, fmt.Errorf("%q is not a duration (expected e.g. %s)", s, AgeExamples)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative: a duration is 0 or more", s)
	}
	return d, nil
}

func parseDaysWeeks(s string) (time.Duration, bool) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
			if err != nil {
				return 0, false
			}
			return time.Duration(v * float64(u.unit)), true
		}
	}
	return 0, false
}

// Positive is the least age of one that must be above zero (AgeAtLeast).
const Positive time.Duration = 1

// AgeAtLeast reads an age (ParseAge) of at least min; example is a value
// to suggest ("10m"). A well-formed age below min is an error that says
// so ("the duration must be above zero").
func AgeAtLeast(s string, min time.Duration, example string) (time.Duration, error) {
	d, err := ParseAge(s)
	if err != nil {
		return 0, err
	}
	if d < min {
		return 0, fmt.Errorf("%q is a duration, but it must be %s (such as %s)", strings.TrimSpace(s), ageFloor(min), example)
	}
	return d, nil
}

// ageFloor words the least value of an age: "above zero", "at least 1s".
func ageFloor(min time.Duration) string {
	if min == Positive {
		return "above zero"
	}
	return "at least " + min.String()
}

var sizeUnits = []struct {
	suffix string
	mult   float64
}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}

// ParseSize reads a size in bytes: a number with a unit (KiB, MiB, GiB,
// TiB: powers of 1024; KB, MB, GB, TB: powers of 1000; B), the unit in
// any case (64MiB, 64mib, 1.5GiB), or a whole number of bytes (1048576).
// Errors: empty, not such a size, or negative, each saying so.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty size (expected e.g. %s)", SizeExamples)
	}
	for _, u := range sizeUnits {
		if len(s) <= len(u.suffix) || !strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(s[:len(s)-len(u.suffix)]), 64)
		switch {
		case err != nil:
			return 0, fmt.Errorf("%q is not a size (expected e.g. %s)", s, SizeExamples)
		case v < 0:
			return 0, fmt.Errorf("%q is negative: a size is 0 or more", s)
		}
		return int64(v * u.mult), nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a size (expected e.g. %s)", s, SizeExamples)
	case n < 0:
		return 0, fmt.Errorf("%q is negative: a size is 0 or more", s)
	}
	return n, nil
}

// SizeAtLeast reads a size (ParseSize) of at least min bytes; a
// well-formed size below min is an error that says so.
func SizeAtLeast(s string, min int64) (int64, error) {
	n, err := ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n < min {
		return 0, fmt.Errorf("%q is a size, but it must be at least %s", strings.TrimSpace(s), FormatSize(min))
	}
	return n, nil
}

// FormatSize renders n bytes in the largest binary unit that divides it
// (1MiB, 64KiB, 100B), a form ParseSize reads back.
func FormatSize(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// FormatAge writes a duration the way ParseAge reads it and table
// properties say it: whole days as 14d, else whole hours (36h), whole
// minutes (15m), else Go's form (90s, 1.5s).
func FormatAge(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d > 0 && d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d > 0 && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d > 0 && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}
