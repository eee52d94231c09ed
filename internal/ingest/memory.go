package ingest

import (
	"runtime/debug"
)

// Memory settings of the Go runtime for an ingest process.
const (
	// BaseMemory is the memory an ingest needs beside the files being
	// decoded: the table metadata, the commit's manifests, HTTP buffers.
	BaseMemory int64 = 160 << 20
	// GCPercent is the garbage collector's growth target (GOGC) while the
	// heap is below the soft limit: fewer collections for the many small
	// allocations of small files; the limit keeps the peak bounded.
	GCPercent = 200
)

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
// and the GC percent to GCPercent (runtime/debug.SetMemoryLimit,
// SetGCPercent), each unless the user set it with the GOMEMLIMIT or GOGC
// environment variable (getenv reports them). With the limit the garbage
// collector works harder near it instead of letting the heap double past
// it; it is soft: a run whose live data exceeds it still completes. It
// returns a function restoring the previous settings. Only the process's
// owner (the command, a benchmark) should call it.
func TuneRuntime(budget int64, getenv func(string) (string, bool)) (restore func()) {
	prevLimit, prevGC := int64(-1), -1
	if _, set := getenv("GOMEMLIMIT"); !set {
		prevLimit = debug.SetMemoryLimit(MemoryLimit(budget))
	}
	if _, set := getenv("GOGC"); !set {
		prevGC = debug.SetGCPercent(GCPercent)
	}
	return func() {
		if prevLimit >= 0 {
			debug.SetMemoryLimit(prevLimit)
		}
		if prevGC >= 0 {
			debug.SetGCPercent(prevGC)
		}
	}
}
