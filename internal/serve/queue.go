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
	// request numbers the notification that announced the key first (0
	// for a key put back after a load): take serves requests in turn.
	request uint64
}

// older keeps the earliest times of two records of one key, the later
// notBefore and the first notification.
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
	if w.request == 0 || (o.request != 0 && o.request < w.request) {
		w.request = o.request
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
	return q.addAll(map[string]waiting{key: w}) == 0
}

// addAll queues the keys of one notification at once (a load takes all of
// them or none), each once, and returns how many were dropped because the
// queue was full.
func (q *queue) addAll(ws map[string]waiting) (dropped int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	added := false
	for key, w := range ws {
		if old, ok := q.keys[key]; ok {
			q.keys[key] = old.older(w)
			continue
		}
		if len(q.keys) >= q.max {
			q.overflowed = true
			dropped++
			continue
		}
		q.keys[key] = w
		added = true
	}
	if added {
		select {
		case q.ready <- struct{}{}:
		default:
		}
	}
	return dropped
}

// take removes and returns up to n keys due at now (notBefore passed),
// taken from the notifications that announced them in turn (one key of
// each, oldest notification first, then a second of each...), so that keys
// announced by one large notification never hold back those of the next
// ones.
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
		// Rank each key within its notification (by key), then order by
		// rank, notification and key: one of each notification per round.
		sort.Slice(keys, func(i, j int) bool {
			a, b := q.keys[keys[i]], q.keys[keys[j]]
			if a.request != b.request {
				return a.request < b.request
			}
			return keys[i] < keys[j]
		})
		rank := make(map[string]int, len(keys))
		for i, k := range keys {
			if i > 0 && q.keys[keys[i-1]].request == q.keys[k].request {
				rank[k] = rank[keys[i-1]] + 1
			}
		}
		sort.SliceStable(keys, func(i, j int) bool { return rank[keys[i]] < rank[keys[j]] })
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
