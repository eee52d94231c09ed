package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// pausingRows are rows whose values a cut changes: 3.955 cut after "3.9"
// still reads as a number.
func pausingRows(n int) []reading {
	base := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	out := make([]reading, n)
	for i := range out {
		out[i] = reading{device: fmt.Sprintf("dev-%d", i), t: base.Add(time.Duration(i) * time.Minute), temp: 3.955 + float64(i)}
	}
	return out
}

// TestWriterWithPausesIsNeverCut: loggers write into a local landing folder
// in place, pausing longer than the settle time, while ingest runs again
// and again (as cron does). One pauses in the middle of a line, one writes
// a gzip stream that it flushes and closes only at the end, one appends a
// gzip member per chunk (gzip >>), pausing in the middle of a line: a
// complete gzip stream after every chunk. Ingest never
// takes either before it is complete: the table ends with every row whole,
// once, and the runs reported the files as waiting for their open end.
func TestWriterWithPausesIsNeverCut(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	dir := e.landing.(*storage.LocalStore).Path("")
	if err := os.MkdirAll(filepath.Join(dir, "gw"), 0o755); err != nil {
		t.Fatal(err)
	}
	const settle, pause = 300 * time.Millisecond, 700 * time.Millisecond // the pauses outlast the settle time
	csvRows, gzRows, memberRows := pausingRows(4), pausingRows(3), pausingRows(3)
	for i := range gzRows {
		gzRows[i].device = "gz-" + gzRows[i].device
		memberRows[i].device = "member-" + memberRows[i].device
	}

	var writers sync.WaitGroup
	writeErr := make(chan error, 3)
	writers.Add(3)
	go func() { // a gzip logger that appends a member per chunk, pausing mid-line
		defer writers.Done()
		lines := strings.SplitAfter(string(csvFile(memberRows, false, false)), "\n")
		for _, l := range lines[:len(lines)-1] {
			cut := max(len(l)-3, 0) // "...,3.9" | "55\n"
			for _, part := range []string{l[:cut], l[cut:]} {
				if part == "" {
					continue
				}
				f, err := os.OpenFile(filepath.Join(dir, "gw", "members.csv.gz"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
				if err != nil {
					writeErr <- err
					return
				}
				zw := gzip.NewWriter(f)
				_, err = zw.Write([]byte(part))
				if cerr := zw.Close(); err == nil {
					err = cerr
				}
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					writeErr <- err
					return
				}
				if part == l[:cut] {
					time.Sleep(pause)
				}
			}
		}
	}()
	go func() { // a CSV logger that pauses in the middle of each line
		defer writers.Done()
		f, err := os.Create(filepath.Join(dir, "gw", "logger.csv"))
		if err != nil {
			writeErr <- err
			return
		}
		defer f.Close()
		lines := strings.SplitAfter(string(csvFile(csvRows, false, false)), "\n")
		for _, l := range lines[:len(lines)-1] {
			cut := max(len(l)-3, 0) // "...,3.9" | "55\n"
			for _, part := range []string{l[:cut], l[cut:]} {
				if _, err := f.WriteString(part); err != nil {
					writeErr <- err
					return
				}
				if part == l[:cut] && cut > 0 {
					time.Sleep(pause)
				}
			}
		}
	}()
	go func() { // a gzip logger: one row at a time, flushed, closed at the end
		defer writers.Done()
		f, err := os.Create(filepath.Join(dir, "gw", "logger.csv.gz"))
		if err != nil {
			writeErr <- err
			return
		}
		defer f.Close()
		zw := gzip.NewWriter(f)
		for _, l := range strings.SplitAfter(string(csvFile(gzRows, false, false)), "\n") {
			if _, err := zw.Write([]byte(l)); err == nil {
				err = zw.Flush()
			}
			if err != nil {
				writeErr <- err
				return
			}
			time.Sleep(pause)
		}
		if err := zw.Close(); err != nil {
			writeErr <- err
		}
	}()
	writing := make(chan struct{})
	go func() { writers.Wait(); close(writing) }()

	cfg := e.config()
	cfg.SettleTime, cfg.OpenEndSettleTime = settle, time.Minute
	var waits []string
	cfg.OnFile = func(r ingest.FileResult) {
		switch r.Status {
		case ingest.Waiting:
			waits = append(waits, r.Reason)
		case ingest.Loaded:
		default:
			t.Errorf("%s: %s %s", r.Key, r.Status, r.Reason)
		}
	}
	deadline := time.Now().Add(time.Minute) // a bound on a hang, not a measure of speed
	for done := false; ; {
		select {
		case <-writing:
			done = true
		default:
		}
		if _, err := ingest.Run(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if done && len(e.keys(t, "gw/")) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("files still in the landing folder: %v", e.keys(t, "gw/"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(writeErr)
	for err := range writeErr {
		t.Fatal(err)
	}

	var want []string
	for _, r := range slices.Concat(csvRows, gzRows, memberRows) {
		want = append(want, r.String())
	}
	slices.Sort(want)
	if got := tableRows(t, e); !slices.Equal(got, want) {
		t.Fatalf("table rows\n%v\nwant\n%v", got, want)
	}
	joined := strings.Join(waits, "\n")
	for _, open := range []string{"its last line has no line end", "the gzip stream stops before its end", "its decompressed text's last line has no line end"} {
		if !strings.Contains(joined, open) {
			t.Errorf("no run reported a file waiting because %s; waits:\n%s", open, joined)
		}
	}
}

// TestLastLineWithoutEnd: a CSV whose last line has no line end is complete
// on S3 (an object appears whole) and loads at once, that line included;
// in a local folder it waits for the open-end settle time, then loads as
// it is, its line saying so (a complete file's says nothing).
func TestLastLineWithoutEnd(t *testing.T) {
	ctx := context.Background()
	rows := pausingRows(3)
	body := strings.TrimSuffix(string(csvFile(rows, false, false)), "\n")
	var want []string
	for _, r := range rows {
		want = append(want, r.String())
	}
	slices.Sort(want)

	t.Run("s3", func(t *testing.T) {
		e := s3Env(t)
		e.put(t, "gw/no-end.csv", []byte(body))
		cfg := e.config()
		cfg.SettleTime, cfg.OpenEndSettleTime = 0, 0 // the defaults: none on S3
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Loaded != 1 || rep.Rows != 3 {
			t.Fatalf("run: %+v, %v", rep, err)
		}
		if got := tableRows(t, e); !slices.Equal(got, want) {
			t.Fatalf("rows %v, want %v", got, want)
		}
	})
	t.Run("local", func(t *testing.T) {
		e := localEnv(t)
		e.put(t, "gw/no-end.csv", []byte(body))
		path := e.landing.(*storage.LocalStore).Path("gw/no-end.csv")
		cfg := e.config()
		cfg.SettleTime, cfg.OpenEndSettleTime = 0, 0 // the defaults: 30s, 10m
		old := time.Now().Add(-time.Minute)          // complete for the settle time, not for the open end
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Waiting != 1 || rep.Loaded != 0 || rep.Files[0].ReadyAt.Sub(old) != 10*time.Minute || !rep.Files[0].OpenEnd ||
			!strings.Contains(rep.Files[0].Reason, "its last line has no line end and it was modified 1m") ||
			!strings.Contains(rep.Files[0].Reason, "ago, within the open-end settle time of 10m0s") {
			t.Fatalf("run within the open-end settle time: %+v, %v", rep.Files, err)
		}
		// Past the open-end settle time it loads as it is, and its line
		// says so; a complete file of the same age says nothing.
		whole := pausingRows(2)
		for i := range whole {
			whole[i].device = "whole-" + whole[i].device
		}
		e.put(t, "gw/whole.csv", csvFile(whole, false, false))
		older := time.Now().Add(-11 * time.Minute)
		for _, p := range []string{path, e.landing.(*storage.LocalStore).Path("gw/whole.csv")} {
			if err := os.Chtimes(p, older, older); err != nil {
				t.Fatal(err)
			}
		}
		if rep, err = ingest.Run(ctx, cfg); err != nil || rep.Loaded != 2 || rep.Rows != 5 {
			t.Fatalf("run after it: %+v, %v", rep, err)
		}
		for _, f := range rep.Files {
			switch f.Key {
			case "gw/no-end.csv":
				if !f.OpenEnd || !strings.Contains(f.Reason, "its last line has no line end and it was not modified for 11m") ||
					!strings.Contains(f.Reason, ", past the open-end settle time of 10m0s: taken as it is (check its last row)") {
					t.Errorf("open end loaded: %+v; want it marked", f)
				}
			case "gw/whole.csv":
				if f.OpenEnd || f.Reason != "" {
					t.Errorf("complete file loaded: %+v; want no note", f)
				}
			}
		}
		for _, r := range whole {
			want = append(want, r.String())
		}
		slices.Sort(want)
		if got := tableRows(t, e); !slices.Equal(got, want) {
			t.Fatalf("rows %v, want %v", got, want)
		}
	})
}

// TestWriterPausedInsideAQuotedValue: a logger writes a row whose quoted
// value spans two lines and pauses after the first one, so the file ends
// in a line end, inside the quoted value. In a local folder the file waits
// (its end is open) instead of being quarantined as malformed and deleted
// while its writer still holds it; once written to its end, every row
// loads, the value with its line break. On S3 the object is complete as
// it is: the same bytes are quarantined at once.
func TestWriterPausedInsideAQuotedValue(t *testing.T) {
	ctx := context.Background()
	const head = "time,device_id,temperature_c,note\n2026-01-05T10:01:00Z,d1,1.5,plain\n2026-01-05T10:02:00Z,d1,2.5,\"first line\n"
	const rest = "second line\"\n2026-01-05T10:03:00Z,d1,3.5,after\n"
	t.Run("local", func(t *testing.T) {
		e := localEnv(t)
		e.put(t, "gw/first.csv", []byte("time,device_id,temperature_c,note\n2026-01-05T09:00:00Z,d0,0.5,x\n"))
		if _, err := ingest.Run(ctx, e.config()); err != nil { // the table exists
			t.Fatal(err)
		}
		e.put(t, "gw/notes.csv", []byte(head))
		path := e.landing.(*storage.LocalStore).Path("gw/notes.csv")
		age := func(d time.Duration) {
			t.Helper()
			old := time.Now().Add(-d)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}
		cfg := e.config()
		cfg.SettleTime, cfg.OpenEndSettleTime = 0, 0 // the defaults: 30s, 10m
		age(time.Minute)                             // the writer paused longer than the settle time
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Waiting != 1 || rep.Quarantined != 0 ||
			!strings.Contains(rep.Files[0].Reason, "it ends inside a quoted value (the quote opened on line 3 is not closed) and it was modified 1m0s ago, within the open-end settle time of 10m0s") {
			t.Fatalf("run while the writer pauses: %+v, %v", rep.Files, err)
		}
		if got := e.keys(t, ""); !slices.Contains(got, "gw/notes.csv") {
			t.Fatalf("landing folder %v: the file was taken", got)
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(rest); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		age(time.Minute)
		if rep, err = ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 || rep.Rows != 3 {
			t.Fatalf("run once written: %+v, %v", rep, err)
		}
		if got := tableNotes(t, e); !slices.Equal(got, []string{"x", "plain", "first line\nsecond line", "after"}) {
			t.Fatalf("notes %q", got)
		}
	})
	t.Run("s3", func(t *testing.T) {
		e := s3Env(t)
		e.put(t, "gw/notes.csv", []byte(head))
		cfg := e.config()
		cfg.SettleTime, cfg.OpenEndSettleTime = 0, 0 // the defaults: none on S3
		e.put(t, "gw/other.csv", csvFile(readings(1, 0, 3), false, false))
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Quarantined != 1 || rep.Waiting != 0 || rep.Files[0].Key != "gw/notes.csv" || rep.Files[0].Status != ingest.Quarantined {
			t.Fatalf("run: %+v, %v", rep.Files, err)
		}
	})
}

// tableNotes returns the note column of the table, in time order.
func tableNotes(t *testing.T, e env) []string {
	t.Helper()
	type note struct {
		at   int64
		text string
	}
	var notes []note
	eachRecord(t, e, func(rec arrow.RecordBatch) {
		ts := rec.Column(rec.Schema().FieldIndices("time")[0]).(*array.Timestamp)
		col := rec.Column(rec.Schema().FieldIndices("note")[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			notes = append(notes, note{int64(ts.Value(i)), col.Value(i)})
		}
	})
	slices.SortFunc(notes, func(a, b note) int { return int(a.at - b.at) })
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = n.text
	}
	return out
}

// TestStaleTempFilesOfTheLandingFolderAreRemoved: the temporary and lock
// files that killed writes leave in a local landing folder (in the
// gateways' folders, the quarantine, the lease folder) are removed by a
// run once an hour old, below its own prefix; younger ones (a write under
// way) and other writers' hidden files stay, as do those below another
// poller's prefix.
func TestStaleTempFilesOfTheLandingFolderAreRemoved(t *testing.T) {
	ctx := context.Background()
	old, young := time.Now().Add(-2*time.Hour), time.Now().Add(-time.Minute)
	for _, prefix := range []string{"", "gw-1/"} {
		t.Run("prefix "+prefix, func(t *testing.T) {
			e := localEnv(t)
			dir := e.landing.(*storage.LocalStore).Path("")
			stale := []string{"gw-1/file00992.csv.tl-lock", "gw-1/.tl-tmp-a.csv-bd51473cba2a9e7b",
				"_rejected/gw-1/.tl-tmp-b.csv.error.json-d683ece8a2bd53fb", "_timelake/lease/.tl-tmp-iot.readings.json-4dafe0c1ca6574b7"}
			kept := []string{"gw-1/.tl-tmp-writing.csv-0123456789abcdef", "gw-1/being-copied.csv.tl-lock", // young: a write under way
				"gw-1/.logger.csv.swp", "gw-1/.rsync.csv.Xy12Ab"} // other writers' names
			other := []string{"gw-2/.tl-tmp-c.csv-00112233aabbccdd", "gw-2/file1.csv.tl-lock"}
			if prefix == "" {
				stale = append(stale, other...)
			} else {
				kept = append(kept, other...)
			}
			for _, k := range slices.Concat(stale, kept) {
				p := filepath.Join(dir, filepath.FromSlash(k))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				at := old
				if strings.Contains(k, "writing") || strings.Contains(k, "being-copied") {
					at = young
				}
				if err := os.Chtimes(p, at, at); err != nil {
					t.Fatal(err)
				}
			}
			e.put(t, "gw-1/a.csv", csvFile(readings(1, 0, 3), false, false))
			cfg := e.config()
			cfg.Prefix = prefix
			if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 {
				t.Fatalf("run: %+v, %v", rep, err)
			}
			for _, k := range stale {
				if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(k))); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: %v, want it removed", k, err)
				}
			}
			for _, k := range kept {
				if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(k))); err != nil {
					t.Errorf("%s: %v, want it kept", k, err)
				}
			}
		})
	}
}

// TestFileGrownAfterItsLoad: a file loaded while its writer was still
// appending (here: no settle time at all) and grown since is quarantined
// saying so, the bytes loaded unchanged and the rest not in the table,
// not as a file of different content; the table keeps its rows, once.
func TestFileGrownAfterItsLoad(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	first := csvFile(pausingRows(2), false, false)
	e.put(t, "gw/logger.csv", first)
	if rep, err := ingest.Run(ctx, e.config()); err != nil || rep.Loaded != 1 {
		t.Fatalf("first run: %+v, %v", rep, err)
	}
	grown := append(bytes.Clone(first), "2026-01-05T11:00:00Z,dev-9,9.5\n"...)
	e.put(t, "gw/logger.csv", grown)
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.Quarantined != 1 {
		t.Fatalf("second run: %+v, %v", rep, err)
	}
	want := fmt.Sprintf("it has grown since (%d bytes then, the same bytes and %d more now)", len(first), len(grown)-len(first))
	if r := rep.Files[0].Reason; !strings.Contains(r, "gw/logger.csv was loaded in snapshot ") ||
		!strings.Contains(r, "while it was still being written: "+want) || strings.Contains(r, "different content") {
		t.Fatalf("reason %q, want it to say %q", r, want)
	}
	if got := tableRows(t, e); len(got) != 2 {
		t.Fatalf("table rows %v, want the 2 loaded once", got)
	}
}

// TestClockAhead: a file whose writer's clock is a year ahead is taken by
// the time this host saw it change (its change time), in the same run,
// not a year later; the run reports it (clock_ahead) and the load history
// says it landed now, not a year ahead.
func TestClockAhead(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw/ahead.csv", csvFile(readings(1, 0, 3), false, false))
	ahead := time.Now().AddDate(1, 0, 0)
	if err := os.Chtimes(e.landing.(*storage.LocalStore).Path("gw/ahead.csv"), ahead, ahead); err != nil {
		t.Fatal(err)
	}
	cfg := e.config()
	cfg.SettleTime = time.Second // within a run's wait (MaxSettleWait)
	before := time.Now()
	rep, err := ingest.Run(ctx, cfg)
	if err != nil || rep.Loaded != 1 {
		t.Fatalf("run: %+v, %v", rep.Files, err)
	}
	if rep.ClockAhead == nil || rep.ClockAhead.Files != 1 || rep.ClockAhead.Key != "gw/ahead.csv" || rep.ClockAhead.Seconds < 364*24*3600 {
		t.Fatalf("clock_ahead %+v", rep.ClockAhead)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	var landed time.Time
	if _, err := tbl.ScanHistory(ctx, func(r lake.LoadRecord) error {
		if r.Key == "gw/ahead.csv" {
			landed = r.LandedAt
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b, ok, err := tbl.FindLoaded(ctx, "gw/ahead.csv")
	if err != nil || !ok {
		t.Fatalf("not loaded: %v", err)
	}
	if landed.IsZero() {
		landed, _ = time.Parse(time.RFC3339Nano, b.Summary[lake.SummarySourceModified])
	}
	if landed.Before(before.Add(-time.Minute)) || landed.After(time.Now()) {
		t.Fatalf("landed at %s, want the time this host saw it (%s)", landed, before)
	}
}
