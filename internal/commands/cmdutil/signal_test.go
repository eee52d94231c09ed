package cmdutil

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestStopOnSignals: the first signal stops the run gracefully; the same
// stop sent again at once (timeout(1) signals the process and its group)
// does not end the process; a signal after RepeatedSignal does.
func TestStopOnSignals(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	clock := t0
	sigs := make(chan os.Signal)
	cancels := 0
	var killed []os.Signal
	done := make(chan struct{})
	go func() {
		defer close(done)
		stopOnSignals(sigs, func() { cancels++ }, func() time.Time { return clock },
			func(s os.Signal) { killed = append(killed, s) })
	}()
	send := func(at time.Duration, s os.Signal) {
		clock = t0.Add(at)
		sigs <- s // unbuffered: stopOnSignals has taken the one before
	}
	send(0, syscall.SIGTERM)
	send(time.Millisecond, syscall.SIGTERM)
	send(RepeatedSignal/2, os.Interrupt)
	send(RepeatedSignal+time.Millisecond, os.Interrupt)
	<-done
	if cancels != 1 {
		t.Errorf("cancelled %d times, want once", cancels)
	}
	if len(killed) != 1 || killed[0] != os.Interrupt {
		t.Errorf("killed by %v, want the SIGINT sent after %s", killed, RepeatedSignal)
	}
}
