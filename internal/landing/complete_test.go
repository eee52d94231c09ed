package landing

import (
	"strings"
	"testing"
	"time"
)

// TestSettle: a file waits while it is younger than the settle time, and
// while its end is open and it is younger than the open-end settle time;
// each wait says when it ends. The zero rule takes every file at once.
func TestSettle(t *testing.T) {
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	rule := Settle{Time: 30 * time.Second, OpenEndTime: 10 * time.Minute}
	complete, open := "time,v\n2026-01-05T10:00:00Z,1\n", "time,v\n2026-01-05T10:00:00Z,1"
	for _, tc := range []struct {
		name   string
		rule   Settle
		body   string
		age    time.Duration
		reason string // "" when complete
		until  time.Duration
	}{
		{"young", rule, complete, 3 * time.Second, "modified 3s ago, within the settle time of 30s", 27 * time.Second},
		{"settled", rule, complete, 30 * time.Second, "", 0},
		{"open end, young", rule, open, 45 * time.Second, "its last line has no line end and it was modified 45s ago, within the open-end settle time of 10m0s", 555 * time.Second},
		{"open end, old", rule, open, 10 * time.Minute, "", 0},
		{"modified in the future", rule, complete, -time.Hour, "its modification time is 1h0m0s in the future", time.Hour + 30*time.Second},
		{"no rule", Settle{}, open, 0, "", 0},
		{"no rule, modified in the future", Settle{}, open, -time.Hour, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			modified := now.Add(-tc.age)
			w, err := tc.rule.Judge("gw/a.csv", strings.NewReader(tc.body), int64(len(tc.body)), modified, now)
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason == "" {
				if w.Waiting() {
					t.Fatalf("waits: %+v", w)
				}
				return
			}
			if !w.Waiting() || !strings.Contains(w.Reason, tc.reason) || w.Until.Sub(now) != tc.until {
				t.Fatalf("wait %+v, want %q until now+%s", w, tc.reason, tc.until)
			}
			if want := strings.Contains(tc.reason, "open-end"); w.OpenEnd != want {
				t.Fatalf("wait %+v: OpenEnd %v, want %v", w, w.OpenEnd, want)
			}
		})
	}
}
