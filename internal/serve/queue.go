package serve

import (
	"sort"
	"sync"
	"time"
)

// waiting is a landing file known to wait: announced by an event, or
// listed by a sweep.
type waiting struct {
	// since is when the file landed, as far as serve knows: the event's
	// time, the object's modification time, or when the event arrived.
	since time.Time
	// announced is when the event arrived; zero for a file the sweep found.
	announced time.Time
	// notBefore is when a file of a local folder that was not complete yet
	// may be (ingest.FileResult.ReadyAt): the queue holds it back until
	// then. Zero: at once.
	notBefore time.Time
}

// older keeps the earliest times of two records of one key, and the later
// notBefore.
func (w waiting) older(o waiting) waiting {
	if o.notBefore.After(w.notBefore) {
		w.notBefore = o.notBefore
	}
	if !o.since.IsZero() && (w.since.IsZero() || o.since.Before(w.since)) {
		w.since = o.since
	}
	if !o.announced.IsZero() && (w.announced.IsZero() || o.announced.Before(w.announced)) {
		w.announced = o.announced
	}
	return w
}

// queue holds the keys that events announced and no load took yet, each
// once: duplicate events of a key are one entry.
type queue struct {
	mu   sync.Mutex
	keys map[string]waiting
	max  int
	// overflowed is set when a key was dropped because the queue was full
	// (the sweep loads it), until the next sweep.
	overflowed bool
	ready      chan struct{} // one token when keys were added
}

func newQueue(max int) *queue {
	return &queue{keys: map[string]waiting{}, max: max, ready: make(chan struct{}, 1)}
}

// add queues key; it returns false when the queue is full and the key was
// dropped.
func (q *queue) add(key string, w waiting) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if old, ok := q.keys[key]; ok {
		q.keys[key] = old.older(w)
		return true
	}
	if len(q.keys) >= q.max {
		q.overflowed = true
		return false
	}
	q.keys[key] = w
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// take removes and returns up to n keys due at now (notBefore passed),
// those announced first, in key order.
func (q *queue) take(n int, now time.Time) map[string]waiting {
	q.mu.Lock()
	defer q.mu.Unlock()
	keys := make([]string, 0, len(q.keys))
	for k, w := range q.keys {
		if !w.notBefore.After(now) {
			keys = append(keys, k)
		}
	}
	if len(keys) > n {
		sort.Slice(keys, func(i, j int) bool { return q.keys[keys[i]].announced.Before(q.keys[keys[j]].announced) })
		keys = keys[:n]
	}
	out := make(map[string]waiting, len(keys))
	for _, k := range keys {
		out[k] = q.keys[k]
		delete(q.keys, k)
	}
	return out
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.keys)
}

// due counts the keys that take would return at now.
func (q *queue) due(now time.Time) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, w := range q.keys {
		if !w.notBefore.After(now) {
			n++
		}
	}
	return n
}

// nextDue is the earliest notBefore of the keys held back (zero when
// none is).
func (q *queue) nextDue() time.Time {
	return q.earliest(func(w waiting) time.Time { return w.notBefore })
}

// takeOverflow reports whether keys were dropped since the last call.
func (q *queue) takeOverflow() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	o := q.overflowed
	q.overflowed = false
	return o
}

// oldest is the earliest since of the queued keys (zero when empty).
func (q *queue) oldest() time.Time {
	return q.earliest(func(w waiting) time.Time { return w.since })
}

// earliest is the earliest non-zero time of the queued keys (zero when
// none has one).
func (q *queue) earliest(of func(waiting) time.Time) time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	var t time.Time
	for _, w := range q.keys {
		if wt := of(w); !wt.IsZero() && (t.IsZero() || wt.Before(t)) {
			t = wt
		}
	}
	return t
}
