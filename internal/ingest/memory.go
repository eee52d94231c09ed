package ingest

import (
	"runtime/debug"
)

// BaseMemory is the memory an ingest needs beside the files being decoded:
// the table metadata (it grows with the snapshot history), the commit's
// manifests, HTTP buffers.
const BaseMemory int64 = 128 << 20

// GCPercent is the garbage collector's target an ingest runs with (Go's
// GOGC; Go's own default is 100): the heap may grow to three times what is
// live before a collection, up to the soft memory limit, which then holds it
// down. A run whose heap is small (small files, Parquet) collects half as
// often; one that decodes large files works against the limit as before.
// Measured on the bench (docs/performance.md, "Tuning"): 9 to 15% less CPU
// on c1, c2, c3, c4 and c6, and the same peak RSS as GOGC=100 under a limit
// 32 MiB higher on the large files.
const GCPercent = 200

// MemoryLimit is the soft memory limit an ingest with the given memory
// budget runs under: BaseMemory plus twice the budget, as a decoded file
// takes a small multiple of its size while it is sorted and written.
func MemoryLimit(budget int64) int64 {
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	return BaseMemory + 2*budget
}

// TuneRuntime sets the Go runtime's soft memory limit to MemoryLimit(budget)
// (runtime/debug.SetMemoryLimit) unless the user set one with the
// GOMEMLIMIT environment variable, and the collector's target to GCPercent
// unless the user set GOGC (getenv reports them). Near the limit the
// garbage collector works harder instead of letting the heap grow past it;
// the limit is soft: a run whose live data exceeds it still completes. It
// returns a function restoring the previous settings. Only the process's
// owner (the command, a benchmark) should call it.
func TuneRuntime(budget int64, getenv func(string) (string, bool)) (restore func()) {
	var undo []func()
	if _, set := getenv("GOMEMLIMIT"); !set {
		prev := debug.SetMemoryLimit(MemoryLimit(budget))
		undo = append(undo, func() { debug.SetMemoryLimit(prev) })
	}
	if _, set := getenv("GOGC"); !set {
		prev := debug.SetGCPercent(GCPercent)
		undo = append(undo, func() { debug.SetGCPercent(prev) })
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}
