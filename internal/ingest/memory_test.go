package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"testing"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
)

func TestTuneRuntime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		budget    int64
		wantLimit int64 // during the run
		wantGC    int   // during the run
	}{
		{"budget", nil, 64 << 20, BaseMemory + 128<<20, GCPercent},
		{"zero budget means the default", nil, 0, BaseMemory + 2*DefaultMemoryBudget, GCPercent},
		{"larger budget", nil, 1 << 30, BaseMemory + 2<<30, GCPercent},
		{"user GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB"}, 64 << 20, math.MaxInt64, GCPercent},
		{"user GOGC wins", map[string]string{"GOGC": "50"}, 64 << 20, BaseMemory + 128<<20, 77},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := debug.SetMemoryLimit(math.MaxInt64)
			defer debug.SetMemoryLimit(prev)
			// 77 stands for what the process had (GOGC read at its start).
			prevGC := debug.SetGCPercent(77)
			defer debug.SetGCPercent(prevGC)

			restore := TuneRuntime(tc.budget, func(k string) (string, bool) {
				v, ok := tc.env[k]
				return v, ok
			})
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit { // -1 reads the limit
				t.Errorf("memory limit = %d, want %d", got, tc.wantLimit)
			}
			if got := debug.SetGCPercent(-1); got != tc.wantGC { // -1 turns it off and returns it
				t.Errorf("GC percent = %d, want %d", got, tc.wantGC)
			}
			debug.SetGCPercent(tc.wantGC)
			restore()
			if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
				t.Errorf("after restore: memory limit = %d", got)
			}
			if got := debug.SetGCPercent(77); got != 77 {
				t.Errorf("after restore: GC percent = %d, want 77", got)
			}
		})
	}
}

// TestAdmissionChargesDecompressedBytes: a gzipped file takes the share of
// the memory budget of its decompressed text, not of its compressed size;
// a file larger than the budget takes the whole budget (and is decoded in
// pieces of it).
func TestAdmissionChargesDecompressedBytes(t *testing.T) {
	ctx := context.Background()
	st, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	text.WriteString("time,device_id,temperature_c\n")
	for i := range 50_000 {
		fmt.Fprintf(&text, "2026-01-05T10:%02d:%02dZ,dev-%d,21.5\n", i/60%60, i%60, i%10)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(text.Bytes())
	zw.Close()
	if _, err := st.Put(ctx, "gw/a.csv.gz", bytes.NewReader(z.Bytes()), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	obj, err := st.Stat(ctx, "gw/a.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.Open(ctx, t.TempDir(), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stop := errors.New("admitted")
	for _, tc := range []struct {
		budget, want int64
	}{
		{64 << 20, int64(text.Len())},
		{1 << 20, 1 << 20},
	} {
		r := newRunner(Config{Landing: st, Lake: l, MemoryBudget: tc.budget, WorkDir: t.TempDir(), SettleTime: -1, OpenEndSettleTime: -1}, landing.HolderIngest)
		var share int64
		it := r.prepare(ctx, obj, func(n int64) error { share = n; return stop })
		if !errors.Is(it.err, stop) {
			t.Fatalf("budget %d: prepare ended with %v before its admission", tc.budget, it.err)
		}
		if share != tc.want {
			t.Errorf("budget %d: share %d for %d compressed and %d decompressed bytes, want %d", tc.budget, share, z.Len(), text.Len(), tc.want)
		}
	}
}
