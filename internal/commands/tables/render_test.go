package tables

import (
	"testing"
	"time"
)

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {4657, "4.5 KiB"},
		{1258291, "1.2 MiB"}, {3 << 30, "3.0 GiB"}, {5 << 40, "5.0 TiB"}, {3 << 50, "3.0 PiB"}, {2048 << 50, "2048.0 PiB"},
	} {
		if got := HumanBytes(tc.n); got != tc.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 1, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "24h", want: now.Add(-24 * time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "2026-01-05T10:00:00Z", want: time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)},
		{in: "2026-01-05T11:00:00+01:00", want: time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)},
		{in: "2026-01-05", want: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)},
		{in: "yesterday", wantErr: true},
		{in: "-5h", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := ParseSince(tc.in, now)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseSince(%q): err %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !got.Equal(tc.want) {
			t.Errorf("ParseSince(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
