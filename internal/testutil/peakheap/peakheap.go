// Package peakheap measures the peak heap of code under a benchmark, for
// the benchmarks that show a bound on memory (b.ReportMetric of
// peak-heap-MiB).
package peakheap

import (
	"runtime"
	"time"
)

// Sample records the largest runtime.MemStats.HeapInuse (bytes) seen,
// every millisecond, into peak until the returned stop is called.
func Sample(peak *uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			*peak = max(*peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() { close(done); <-finished }
}
