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
	}{
		{"budget", nil, 64 << 20, BaseMemory + 128<<20},
		{"zero budget means the default", nil, 0, BaseMemory + 2*DefaultMemoryBudget},
		{"larger budget", nil, 1 << 30, BaseMemory + 2<<30},
		{"user GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB"}, 64 << 20, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := debug.SetMemoryLimit(math.MaxInt64)
			defer debug.SetMemoryLimit(prev)

			restore := TuneRuntime(tc.budget, func(k string) (string, bool) {
				v, ok := tc.env[k]
				return v, ok
			})
			if got := debug.SetMemoryLimit(-1); got != tc.wantLimit { // -1 reads the limit
				t.Errorf("memory limit = %d, want %d", got, tc.wantLimit)
			}
			restore()
			if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
				t.Errorf("after restore: memory limit = %d", got)
			}
		})
	}
}
