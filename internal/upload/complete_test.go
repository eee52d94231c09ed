package upload

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/storage"
)

// TestSpoolWriterWithPausesIsNeverCut: a logger writes into the spool in
// place and pauses in the middle of its lines for longer than --min-age,
// while the spool is uploaded again and again (as cron does). No upload
// takes the file before it is complete: the landing bucket ends with one
// object holding the whole file, and the runs reported it waiting for its
// open end.
func TestSpoolWriterWithPausesIsNeverCut(t *testing.T) {
	for _, members := range []bool{false, true} {
		name := "csv"
		if members {
			name = "gzip member per chunk"
		}
		t.Run(name, func(t *testing.T) { spoolWriterWithPauses(t, members) })
	}
}

// spoolWriterWithPauses is TestSpoolWriterWithPausesIsNeverCut for a CSV
// logger or, with members, a gzip logger that appends a gzip member per
// chunk (gzip >>): a complete gzip stream after every chunk, its text cut
// in the middle of a line while the logger pauses.
func spoolWriterWithPauses(t *testing.T, members bool) {
	forEachStore(t, func(t *testing.T, s storage.Store) {
		spool := t.TempDir()
		const pause = 700 * time.Millisecond
		body := "time,sensor,value\n2026-01-05T10:00:00Z,s1,3.955\n2026-01-05T10:01:00Z,s1,4.955\n2026-01-05T10:02:00Z,s1,5.955\n"
		name, open := "logger.csv", "its last line has no line end"
		if members {
			name, open = "logger.csv.gz", "its decompressed text's last line has no line end"
		}
		written := make(chan error, 1)
		go func() {
			f, err := os.Create(filepath.Join(spool, name))
			if err != nil {
				written <- err
				return
			}
			defer f.Close()
			write := func(chunk string) error {
				if !members {
					_, err := f.WriteString(chunk)
					return err
				}
				zw := gzip.NewWriter(f)
				if _, err := zw.Write([]byte(chunk)); err != nil {
					return err
				}
				return zw.Close()
			}
			for _, l := range strings.SplitAfter(body, "\n") {
				if l == "" {
					continue
				}
				cut := len(l) - 3 // "...,3.9" | "55\n"
				if err := write(l[:cut]); err != nil {
					written <- err
					return
				}
				time.Sleep(pause)
				if err := write(l[cut:]); err != nil {
					written <- err
					return
				}
			}
			written <- nil
		}()
		var waits []string
		cfg := Config{Store: s, Spool: spool, Gateway: "gateway-7", Validate: true,
			MinAge: 300 * time.Millisecond, OpenEndMinAge: time.Minute,
			OnFile: func(r FileResult) {
				if r.Status == Waiting {
					waits = append(waits, r.Reason)
				}
			}}
		deadline := time.Now().Add(time.Minute) // a bound on a hang, not a measure of speed
		done := false
		for {
			select {
			case err := <-written:
				if err != nil {
					t.Fatal(err)
				}
				done = true
			default:
			}
			if _, err := Run(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
			if entries, _ := os.ReadDir(spool); done && len(entries) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the spool file was never uploaded")
			}
			time.Sleep(50 * time.Millisecond)
		}
		ks := keys(t, s)
		if len(ks) != 1 {
			t.Fatalf("objects %v, want one holding the whole file", ks)
		}
		got := object(t, s, ks[0])
		if members {
			got = gunzip(t, got)
		}
		if string(got) != body {
			t.Fatalf("object %s holds %q, want the whole file", ks[0], got)
		}
		if !strings.Contains(strings.Join(waits, "\n"), open) {
			t.Errorf("no run reported the file waiting for its open end: %q", waits)
		}
	})
}

// TestSpoolFileChangedAfterUpload: a spool file that a writer appends to
// after it was read and uploaded is not deleted (the rows after the read
// would be lost) nor uploaded again (those before would load twice): it is
// moved to the rejected folder with a report that says how much of it went
// up. A file the settle times hold back is reported waiting and stays.
func TestSpoolFileChangedAfterUpload(t *testing.T) {
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spool := t.TempDir()
	path := writeFile(t, filepath.Join(spool, "a.csv"), csvRows(2), t0)
	young := writeFile(t, filepath.Join(spool, "b.csv"), csvRows(1), time.Now())
	cfg := Config{Store: s, Spool: spool, Gateway: "gateway-7", Validate: true, MinAge: 30 * time.Second, OpenEndMinAge: 10 * time.Minute,
		AfterUpload: func(FileResult) error {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err == nil {
				_, err = f.WriteString("2026-01-05T11:00:00Z,s9,9.5\n")
				f.Close()
			}
			return err
		}}
	rep, err := Run(t.Context(), cfg)
	if !errors.Is(err, ErrRejected) || rep.Rejected != 1 || rep.Waiting != 1 || len(rep.Files) != 2 {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	r, w := rep.Files[0], rep.Files[1]
	if r.Status != Rejected || r.File != path || !strings.Contains(r.Error, "changed after it was uploaded as "+r.Key) {
		t.Fatalf("changed file: %+v", r)
	}
	if w.Status != Waiting || w.File != young || !strings.Contains(w.Reason, "within the settle time of 30s") || w.ReadyAt.IsZero() {
		t.Fatalf("young file: %+v", w)
	}
	if got := string(object(t, s, r.Key)); got != csvRows(2) {
		t.Fatalf("object %q, want the file as it was read", got)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the changed file is still in the spool: %v", err)
	}
	b, err := os.ReadFile(r.RejectedTo + ".error.json")
	if err != nil {
		t.Fatal(err)
	}
	var report RejectReport
	if err := json.Unmarshal(b, &report); err != nil || report.Key != r.Key ||
		!strings.Contains(report.Hint, "its first "+strconv.Itoa(len(csvRows(2)))+" bytes are uploaded as "+r.Key) {
		t.Fatalf("report %s (%v)", b, err)
	}
	if got, _ := os.ReadFile(r.RejectedTo); string(got) != csvRows(2)+"2026-01-05T11:00:00Z,s9,9.5\n" {
		t.Fatalf("rejected copy %q", got)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("the waiting file: %v", err)
	}
}

// TestSpoolFilePausedInsideAQuotedValue: a spool file whose writer paused
// after the first line of a quoted value ends in a line end, inside the
// value. It waits for its open end (not moved to the rejected folder as
// malformed); written to its end, it is uploaded whole.
func TestSpoolFilePausedInsideAQuotedValue(t *testing.T) {
	const head = "time,sensor,note\n2026-01-05T10:01:00Z,s1,plain\n2026-01-05T10:02:00Z,s1,\"first line\n"
	const rest = "second line\"\n2026-01-05T10:03:00Z,s1,after\n"
	forEachStore(t, func(t *testing.T, s storage.Store) {
		spool := t.TempDir()
		old := time.Now().Add(-time.Minute) // older than --min-age, younger than --open-end-min-age
		path := writeFile(t, filepath.Join(spool, "notes.csv"), head, old)
		cfg := Config{Store: s, Spool: spool, Gateway: "gateway-7", Validate: true, MinAge: 30 * time.Second, OpenEndMinAge: 10 * time.Minute}
		rep, err := Run(t.Context(), cfg)
		if err != nil || rep.Waiting != 1 || rep.Rejected != 0 || len(rep.Files) != 1 ||
			!strings.Contains(rep.Files[0].Reason, "it ends inside a quoted value (the quote opened on line 3 is not closed)") {
			t.Fatalf("run while the writer pauses: %+v, %v", rep, err)
		}
		if ks := keys(t, s); len(ks) != 0 {
			t.Fatalf("uploaded %v while the writer pauses", ks)
		}
		writeFile(t, path, head+rest, old)
		if rep, err = Run(t.Context(), cfg); err != nil || rep.Uploaded != 1 {
			t.Fatalf("run once written: %+v, %v", rep, err)
		}
		if ks := keys(t, s); len(ks) != 1 || string(object(t, s, ks[0])) != head+rest {
			t.Fatalf("objects %v, want one holding the whole file", ks)
		}
	})
}

// TestSpoolOpenEndPastMinAge: a spool file whose last line has no line end
// (its writer stopped inside it) is uploaded as it is once it was not
// modified for --open-end-min-age, and its result says so (reason,
// open_end); a complete file of the same age says nothing.
func TestSpoolOpenEndPastMinAge(t *testing.T) {
	const cut = "time,sensor,value\n2026-12-01T08:08:00Z,d7,20.1\n2026-12-01T08:09:00Z,d7,4"
	forEachStore(t, func(t *testing.T, s storage.Store) {
		spool := t.TempDir()
		now := time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)
		old := now.Add(-12 * time.Minute)
		open := writeFile(t, filepath.Join(spool, "d7.csv"), cut, old)
		whole := writeFile(t, filepath.Join(spool, "d8.csv"), csvRows(2), old)
		cfg := Config{Store: s, Spool: spool, Gateway: "gateway-7", Validate: true, MinAge: 30 * time.Second, OpenEndMinAge: 10 * time.Minute,
			Now: func() time.Time { return now }}
		rep, err := Run(t.Context(), cfg)
		if err != nil || rep.Uploaded != 2 || rep.Waiting != 0 || len(rep.Files) != 2 {
			t.Fatalf("run: %+v, %v", rep, err)
		}
		for _, f := range rep.Files {
			switch f.File {
			case open:
				if !f.OpenEnd || f.Reason != "its last line has no line end and it was not modified for 12m0s, past the open-end settle time of 10m0s: taken as it is (check its last row)" {
					t.Errorf("open end uploaded: %+v; want it marked", f)
				}
				if got := string(object(t, s, f.Key)); got != cut {
					t.Errorf("object %q, want the file as it is", got)
				}
			case whole:
				if f.OpenEnd || f.Reason != "" {
					t.Errorf("complete file uploaded: %+v; want no note", f)
				}
			default:
				t.Errorf("unexpected result %+v", f)
			}
		}
	})
}

// gunzip decompresses every member of a gzip stream.
func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
