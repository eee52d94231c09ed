package ingest

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestTuneRuntime(t *testing.T) {
	for _, tc := range []struct {
		name      string
		env       map[string]string
		budget    int64
		wantLimit int64 // during the run
		wantGC    int
	}{
		{"defaults", nil, 64 << 20, BaseMemory + 128<<20, GCPercent},
		{"zero budget means the default", nil, 0, BaseMemory + 2*DefaultMemoryBudget, GCPercent},
		{"user GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB"}, 64 << 20, math.MaxInt64, GCPercent},
		{"user GOGC wins", map[string]string{"GOGC": "100"}, 64 << 20, BaseMemory + 128<<20, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prevLimit := debug.SetMemoryLimit(math.MaxInt64)
			prevGC := debug.SetGCPercent(100)
			defer func() { debug.SetMemoryLimit(prevLimit); debug.SetGCPercent(prevGC) }()

			restore := TuneRuntime(tc.budget, func(k string) (string, bool) {
				v, ok := tc.env[k]
				return v, ok
			})
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit { // -1 reads the limit
				t.Errorf("memory limit = %d, want %d", got, tc.wantLimit)
			}
			if got := debug.SetGCPercent(tc.wantGC); got != tc.wantGC {
				t.Errorf("GC percent = %d, want %d", got, tc.wantGC)
			}
			restore()
			if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
				t.Errorf("after restore: memory limit = %d", got)
			}
			if got := debug.SetGCPercent(100); got != 100 {
				t.Errorf("after restore: GC percent = %d", got)
			}
		})
	}
}
