// Package wait polls a condition in tests of things that happen in their
// own time (a server loading a file, a process stopping).
package wait

import (
	"testing"
	"time"
)

// For polls cond every 20 ms until it holds, failing the test after a
// minute: a bound on a hang, not a measure of speed (tests never assert
// timings).
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
