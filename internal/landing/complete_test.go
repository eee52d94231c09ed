package landing

import (
	"bytes"
	"compress/gzip"
	"io"
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
		{"open end, older", rule, open, time.Hour, "", 0},
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
				// Taken: marked when its end is open and the open-end
				// settle time is what let it go.
				marked := tc.body == open && tc.rule.OpenEndTime > 0
				if marked != (w.Note != "") || marked != w.OpenEnd || (marked && !strings.Contains(w.Note,
					"its last line has no line end and it was not modified for "+ageText(tc.age)+", past the open-end settle time of 10m0s: taken as it is (check its last row)")) {
					t.Fatalf("taken %+v: marked %v, want %v", w, w.Note != "", marked)
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

// TestSettleGzipPastOpenEnd: past the open-end settle time a gzip file is
// not decompressed to look at its end (decode.OpenEnd would read it
// whole): it is taken without a note, open or not; before that time its
// open end holds it back.
func TestSettleGzipPastOpenEnd(t *testing.T) {
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	rule := Settle{Time: 30 * time.Second, OpenEndTime: 10 * time.Minute}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte("time,v\n2026-01-05T10:00:00Z,1")); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	body := buf.Bytes()
	young, err := rule.Judge("gw/a.csv.gz", bytes.NewReader(body), int64(len(body)), now.Add(-time.Minute), now)
	if err != nil || !young.Waiting() || !young.OpenEnd {
		t.Fatalf("young: %+v, %v; want it to wait for its end", young, err)
	}
	read := &countingReader{r: bytes.NewReader(body)}
	old, err := rule.Judge("gw/a.csv.gz", read, int64(len(body)), now.Add(-time.Hour), now)
	if err != nil || old != (Wait{}) {
		t.Fatalf("old: %+v, %v; want taken without a note", old, err)
	}
	if read.n > 2 {
		t.Fatalf("read %d bytes of the gzip file; want its magic bytes only", read.n)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.ReaderAt
	n int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += n
	return n, err
}

// TestSettleCompletePastOpenEnd: a complete file past the open-end settle
// time is taken without a note, whatever its type.
func TestSettleCompletePastOpenEnd(t *testing.T) {
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	rule := Settle{Time: 30 * time.Second, OpenEndTime: 10 * time.Minute}
	for key, body := range map[string]string{
		"gw/a.csv":  "time,v\n2026-01-05T10:00:00Z,1\n",
		"gw/a.tsv":  "time\tv\n2026-01-05T10:00:00Z\t1\n",
		"gw/a.json": `[{"time":"2026-01-05T10:00:00Z","v":1}]`,
	} {
		w, err := rule.Judge(key, strings.NewReader(body), int64(len(body)), now.Add(-time.Hour), now)
		if err != nil || w != (Wait{}) {
			t.Errorf("%s: %+v, %v; want taken without a note", key, w, err)
		}
	}
}
