package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestExponentialDoublesUpToItsCap(t *testing.T) {
	b := Exponential(time.Second, 5*time.Second, 0)
	var got []time.Duration
	for range 5 {
		got = append(got, b.NextBackOff())
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	b.Reset()
	if d := b.NextBackOff(); d != time.Second {
		t.Fatalf("after Reset: %v, want 1s", d)
	}
	j := Exponential(100*time.Millisecond, time.Second, 0.5)
	for range 100 {
		if d := j.NextBackOff(); d < 50*time.Millisecond || d > 150*time.Millisecond+1 {
			t.Fatalf("jittered first wait %v, want within 50ms..150ms", d)
		}
		j.Reset()
	}
}

func TestSleepAndWaitAreCutShort(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a done context: %v", err)
	}
	stop := make(chan struct{})
	close(stop)
	if Wait(context.Background(), time.Hour, stop) {
		t.Fatal("Wait after stop reported the wait done")
	}
	if !Wait(context.Background(), time.Millisecond, nil) || Sleep(context.Background(), time.Millisecond) != nil {
		t.Fatal("a short wait did not end")
	}
}
