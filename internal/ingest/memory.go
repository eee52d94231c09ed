package ingest

import (
	"runtime/debug"
)

// BaseMemory is the memory an ingest needs beside the files being decoded:
// the table metadata (it grows with the snapshot history), the commit's
// manifests, HTTP buffers.
const BaseMemory int64 = 160 << 20

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
// GOMEMLIMIT environment variable (getenv reports it). Near the limit the
// garbage collector works harder instead of letting the heap double past
// it; the limit is soft: a run whose live data exceeds it still completes.
// It returns a function restoring the previous limit. Only the process's
// owner (the command, a benchmark) should call it.
func TuneRuntime(budget int64, getenv func(string) (string, bool)) (restore func()) {
	if _, set := getenv("GOMEMLIMIT"); set {
		return func() {}
	}
	prev := debug.SetMemoryLimit(MemoryLimit(budget))
	return func() { debug.SetMemoryLimit(prev) }
}
