package quantity

import (
	"strings"
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "1h30m": 90 * time.Minute, "1.5h": 90 * time.Minute, " 36h ": 36 * time.Hour,
		"14d": 14 * 24 * time.Hour, "1.5d": 36 * time.Hour, "2w": 14 * 24 * time.Hour, "0": 0, "0s": 0,
	} {
		if got, err := ParseAge(in); err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"soon": `"soon" is not a duration (expected e.g. 90s`, "5": `"5" has no unit`, "-5m": `"-5m" is negative`,
		"-1d": `"-1d" is negative`, "": "empty duration", "2x": "is not a duration",
	} {
		if _, err := ParseAge(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseAge(%q): %v, want %q", in, err, msg)
		}
	}
	if _, err := AgeAtLeast("0s", Positive, "1h"); err == nil || err.Error() != `"0s" is a duration, but it must be above zero (such as 1h)` {
		t.Errorf("0s: %v", err)
	}
	if _, err := AgeAtLeast("500ms", time.Second, "5m"); err == nil || !strings.Contains(err.Error(), "must be at least 1s") {
		t.Errorf("500ms: %v", err)
	}
	if d, err := AgeAtLeast("1s", time.Second, "5m"); err != nil || d != time.Second {
		t.Errorf("1s: %v %v", d, err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"512KiB": 512 << 10, "64MiB": 64 << 20, "64mib": 64 << 20, "1.5GiB": 3 << 29, "1GB": 1e9, "2tib": 2 << 40,
		"1048576": 1 << 20, "100B": 100, " 8 MiB ": 8 << 20,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{"lots": `"lots" is not a size`, "-1MiB": "is negative", "MiB": "is not a size", "": "empty size"} {
		if _, err := ParseSize(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseSize(%q): %v, want %q", in, err, msg)
		}
	}
	if _, err := SizeAtLeast("12KiB", 1<<20); err == nil || err.Error() != `"12KiB" is a size, but it must be at least 1MiB` {
		t.Errorf("12KiB: %v", err)
	}
	for n, want := range map[int64]string{64 << 20: "64MiB", 1 << 30: "1GiB", 1536: "1536B", 100: "100B", 3 << 40: "3TiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
		if back, err := ParseSize(FormatSize(n)); err != nil || back != n {
			t.Errorf("ParseSize(FormatSize(%d)) = %d, %v", n, back, err)
		}
	}
}
