package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
)

// TestOthersLoadWhileTheFirstIsWritten: once the first file has created
// the table, the other files are decoded while it is still being written,
// and every file is loaded.
func TestOthersLoadWhileTheFirstIsWritten(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	const first, second = "gateway-1/20260105T0000.csv", "gateway-1/20260105T0100.csv"
	e.put(t, first, csvFile(readings(1, 0, 10), false, false))
	e.put(t, second, csvFile(readings(1, 1, 10), false, false))
	cfg := e.config()
	secondDecoding := make(chan struct{})
	var once sync.Once
	var waited atomic.Bool
	cfg.FaultHook = func(stage, key string) {
		switch {
		case key == second && stage == "decode":
			once.Do(func() { close(secondDecoding) })
		case key == first && stage == "write":
			// The first file's write waits for the second file's decode,
			// which only starts once the table exists.
			select {
			case <-secondDecoding:
				waited.Store(true)
			case <-time.After(30 * time.Second):
			}
		}
	}
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !waited.Load() {
		t.Errorf("the second file was not decoded while the first was written")
	}
	if rep.Loaded != 2 || rep.Created == nil || rep.Created.FromFile != first {
		t.Fatalf("loaded %d, created %+v: %+v", rep.Loaded, rep.Created, rep.Files)
	}
	if rows := tableRows(t, e); len(rows) != 20 {
		t.Fatalf("%d rows in the table, want 20", len(rows))
	}
}

// TestFirstFileHoldsItsShare: the file that creates the table holds its
// share of the memory budget while it is written, as the others do, and
// takes a worker's place: under a budget of one file, or with one worker
// (--parallel 1), the next file is not decoded meanwhile.
func TestFirstFileHoldsItsShare(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(cfg *ingest.Config, fileSize int)
	}{
		{"budget of one file", func(cfg *ingest.Config, size int) { cfg.MemoryBudget = int64(size) }}, // each file's share is the whole budget
		{"one worker", func(cfg *ingest.Config, _ int) { cfg.Parallel = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := localEnv(t)
			const first, second = "gateway-1/20260105T0000.csv", "gateway-1/20260105T0100.csv"
			data := csvFile(readings(1, 0, 10), false, false)
			e.put(t, first, data)
			e.put(t, second, csvFile(readings(1, 1, 10), false, false))
			cfg := e.config()
			tc.set(&cfg, len(data))
			// From its first decode to the end of its write, the first
			// file holds its share and its worker.
			var firstBusy, overlapped, firstWritten atomic.Bool
			cfg.FaultHook = func(stage, key string) {
				switch {
				case key == second && stage == "decode":
					if firstBusy.Load() {
						overlapped.Store(true)
					}
				case key == first && stage == "decode":
					firstBusy.Store(true)
				case key == first && stage == "write":
					time.Sleep(200 * time.Millisecond) // time for the second file to start, were it
					firstBusy.Store(false)
					firstWritten.Store(true)
				}
			}
			rep, err := ingest.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !firstWritten.Load() {
				t.Fatal("the first file's write was not seen")
			}
			if overlapped.Load() {
				t.Errorf("the second file was decoded while the first was written")
			}
			if rep.Loaded != 2 {
				t.Fatalf("loaded %d: %+v", rep.Loaded, rep.Files)
			}
		})
	}
}

// TestCopyOfTheFirstFileIsNotLoaded: a copy of the file that creates the
// table (the same bytes under another key), prepared while that file is
// still written, is not loaded a second time (content dedupe): it waits
// for the next run, which settles it.
func TestCopyOfTheFirstFileIsNotLoaded(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	data := csvFile(readings(1, 0, 10), false, false)
	const first, copied = "gateway-1/20260105T0000.csv", "gateway-2/20260105T0000.csv"
	e.put(t, first, data)
	e.put(t, copied, data)
	cfg := e.config()
	cfg.ContentDedupe = true
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rows := tableRows(t, e); len(rows) != 10 {
		t.Fatalf("%d rows in the table, want 10: %+v", len(rows), rep.Files)
	}
	if rep.Loaded != 1 {
		t.Fatalf("loaded %d files, want 1: %+v", rep.Loaded, rep.Files)
	}
	rep, err = ingest.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.AlreadyLoaded != 1 || len(e.keys(t, "")) != 0 {
		t.Fatalf("second run: %+v, landing %v", rep.Files, e.keys(t, ""))
	}
	if rows := tableRows(t, e); len(rows) != 10 {
		t.Fatalf("%d rows in the table after the second run, want 10", len(rows))
	}
}

// TestStoppedRunReportsNoBlankLines: files in flight when a run is
// stopped stay in the landing bucket and get no line without a status.
func TestStoppedRunReportsNoBlankLines(t *testing.T) {
	e := localEnv(t)
	for i := range 6 {
		e.put(t, fmt.Sprintf("gateway-1/20260105T%02d00.csv", i), csvFile(readings(1, i, 10), false, false))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := e.config()
	var mu sync.Mutex
	var blank []string
	cfg.OnFile = func(f ingest.FileResult) {
		if f.Status == "" {
			mu.Lock()
			blank = append(blank, f.Key)
			mu.Unlock()
		}
	}
	cfg.FaultHook = func(stage, key string) {
		if key == "gateway-1/20260105T0200.csv" && stage == "write" {
			cancel()
			time.Sleep(100 * time.Millisecond) // the others meet the stop while decoding
		}
	}
	rep, err := ingest.Run(ctx, cfg)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the stop", err)
	}
	for _, f := range rep.Files {
		if f.Status == "" {
			blank = append(blank, f.Key)
		}
	}
	if len(blank) > 0 {
		t.Fatalf("lines without a status: %v", blank)
	}
	if left := len(e.keys(t, "gateway-1/")); left+rep.Loaded != 6 {
		t.Fatalf("%d files left and %d loaded of 6", left, rep.Loaded)
	}
}

// TestCommitInKeyOrder: the snapshots of one commit, and the report's
// lines, follow the keys' order, whichever file was ready first (here the
// first key, which also creates the table, is written last).
func TestCommitInKeyOrder(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	keys := []string{"gateway-1/20260105T0000.csv", "gateway-1/20260105T0100.csv", "gateway-2/20260105T0000.csv", "gateway-3/20260105T0000.csv"}
	for i, k := range keys {
		e.put(t, k, csvFile(readings(1+i, i, 10), false, false))
	}
	cfg := e.config()
	cfg.CommitWait = time.Minute // one commit of all four
	var mu sync.Mutex
	var lines []string
	cfg.OnFile = func(f ingest.FileResult) {
		mu.Lock()
		lines = append(lines, f.Key)
		mu.Unlock()
	}
	cfg.FaultHook = func(stage, key string) {
		if key == keys[0] && stage == "write" {
			time.Sleep(300 * time.Millisecond) // the others are ready first
		}
	}
	if _, err := ingest.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, s := range tbl.Metadata().Snapshots() {
		order = append(order, s.Summary.Properties[lake.SummaryBatchID])
	}
	if !slices.Equal(order, keys) || !slices.Equal(lines, keys) {
		t.Fatalf("snapshots %v, lines %v, want both in key order %v", order, lines, keys)
	}
}
