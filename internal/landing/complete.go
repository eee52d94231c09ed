package landing

import (
	"fmt"
	"io"
	"time"

	"github.com/timelake/timelake/internal/decode"
)

// Settle is the rule that says when a file of a local folder is complete,
// the one rule of `ingest` and `serve` on a local landing folder and of
// `upload --spool` (docs/ingest.md, "What complete means"). A local file can
// be seen while a writer still appends to it; an S3 object is complete by
// definition (it is visible only once its upload ended), so S3 landing
// buckets take no Settle.
//
// A file is complete once it was not modified (its size and modification
// time unchanged) for Time, and, when its end is open (decode.OpenEnd: a
// CSV or TSV last line without its line end, CSV or TSV text that ends
// inside a quoted value, a gzip stream without its end, a Parquet file
// without its footer, an empty file), for OpenEndTime.
// Hidden and partial names (Skipped) are never taken at all.
type Settle struct {
	// Time is how long any file must be unmodified; 0: no wait.
	Time time.Duration
	// OpenEndTime is how long a file whose end is open must be unmodified;
	// 0: an open end does not hold a file back.
	OpenEndTime time.Duration
}

// Defaults of the rule (docs/ingest.md says why).
const (
	// DefaultSettleTime outlasts the pauses of a logger that flushes its
	// buffer every few seconds, and still lets the next minutely run load
	// a file written in this one.
	DefaultSettleTime = 30 * time.Second
	// DefaultOpenEndSettleTime outlasts a logger that writes a line every
	// few minutes and whose buffer ends mid-line meanwhile; a complete file
	// that simply lacks its last line end waits that long once.
	DefaultOpenEndSettleTime = 10 * time.Minute
)

// DefaultSettle is the rule with its defaults.
var DefaultSettle = Settle{Time: DefaultSettleTime, OpenEndTime: DefaultOpenEndSettleTime}

// Wait says why a file is not complete yet and when it may be: zero for a
// complete file, but for the note on one whose end is open (Note).
type Wait struct {
	// Until is when the file is complete if it does not change meanwhile.
	Until time.Time
	// Reason says why it waits, for the file's report line.
	Reason string
	// OpenEnd is set when the file's end is open: a waiting file waits
	// for its end (OpenEndTime), not for its age (Time); a complete one
	// (Note set) is taken as it is.
	OpenEnd bool
	// Note, on a complete file only, says that its end is open and that
	// it is taken as it is because it was not modified for OpenEndTime
	// (its writer never ends its last line, or stopped inside it: its
	// last row may be cut), for the file's report line.
	Note string
}

// Waiting reports whether the file must wait.
func (w Wait) Waiting() bool { return w.Reason != "" }

// AgeFrom is the time a file's age is judged by: its modification time,
// or, when that is in the future (the clock of the machine that wrote it
// is ahead of this host's) and its change time (storage.ChangeTime, set by
// this host's clock) is not, its change time. A file its writer dates an
// hour or a year ahead is then taken once it was not modified for the
// settle time, as any other, instead of an hour or a year later; without
// a change time it waits until its modification time (ByAge says why).
func AgeFrom(modified, changed, now time.Time) time.Time {
	if modified.After(now) && !changed.IsZero() && !changed.After(now) {
		return changed
	}
	return modified
}

// LandedTime is when a file landed as far as this host can tell: AgeFrom,
// and never later than now (a file its writer dates ahead, without a
// change time, landed at the latest now).
func LandedTime(modified, changed, now time.Time) time.Time {
	if t := AgeFrom(modified, changed, now); !t.After(now) {
		return t
	}
	return now
}

// ClockAhead is how far a file's modification time is ahead of now beyond
// ClockSkew (a writer's clock ahead of this host's): 0 when it is not.
func ClockAhead(modified, now time.Time) time.Duration {
	if d := modified.Sub(now); d > ClockSkew {
		return d
	}
	return 0
}

// ClockSkew is how far ahead of this host's clock a modification time may
// be before it is reported (ClockAhead): clocks kept by NTP agree within
// a second; a minute leaves room for those that are not.
const ClockSkew = time.Minute

// ByAge judges a file by its modification time alone: one modified less
// than Time before now waits. It is the first look (at the listing, before
// the file is read); Judge is the whole rule.
func (s Settle) ByAge(modified, now time.Time) Wait {
	age := now.Sub(modified)
	if s.Time <= 0 || age >= s.Time {
		return Wait{}
	}
	w := Wait{Until: modified.Add(s.Time),
		Reason: fmt.Sprintf("modified %s ago, within the settle time of %s: it may still be being written", ageText(age), s.Time)}
	if age < 0 {
		w.Reason = fmt.Sprintf("its modification time is %s in the future (a clock is off?): it is taken once it is %s old", ageText(-age), s.Time)
	}
	return w
}

// Judge applies the whole rule to a file of size bytes read from r, last
// modified at modified (read before its bytes): ByAge, then its end
// (decode.OpenEnd; key names its type). A file younger than OpenEndTime
// whose end is open waits; an older one is complete, and when its end is
// open the answer says so (Note, OpenEnd) but does not wait. Errors:
// reading r.
func (s Settle) Judge(key string, r io.ReaderAt, size int64, modified, now time.Time) (Wait, error) {
	if w := s.ByAge(modified, now); w.Waiting() {
		return w, nil
	}
	age := now.Sub(modified)
	if s.OpenEndTime <= 0 {
		return Wait{}, nil
	}
	settled := age >= s.OpenEndTime
	openEnd := decode.OpenEnd
	if settled {
		// Past OpenEndTime the end decides no wait, only the note: its
		// head and tail are read, not the whole file (a CSV file's
		// quotes), on every file a backlog holds; of a gzip file only
		// its magic bytes.
		gz, err := decode.StartsGzip(key, r, size)
		if err != nil || gz {
			return Wait{}, err
		}
		openEnd = decode.OpenEndAtItsEdges
	}
	open, err := openEnd(key, r, size)
	if err != nil || open == "" {
		return Wait{}, err
	}
	if settled {
		return Wait{OpenEnd: true,
			Note: fmt.Sprintf("%s and it was not modified for %s, past the open-end settle time of %s: taken as it is (check its last row)",
				open, ageText(age), s.OpenEndTime)}, nil
	}
	return Wait{Until: modified.Add(s.OpenEndTime), OpenEnd: true,
		Reason: fmt.Sprintf("%s and it was modified %s ago, within the open-end settle time of %s: it may still be being written",
			open, ageText(age), s.OpenEndTime)}, nil
}

// ageText rounds an age for a report line (0.3s, 12s, 4m10s).
func ageText(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
