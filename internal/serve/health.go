package serve

import (
	"sync"
	"time"
)

// health is what GET /healthz reports: healthy while the lease is held and
// neither the last sweep nor the last load failed.
type health struct {
	mu         sync.Mutex
	leaseHeld  bool
	lease      string // why the lease is not held
	sweepErr   string
	loadErr    string
	lastSweep  time.Time
	lastCommit time.Time
}

// Health is the /healthz document.
type Health struct {
	Status string `json:"status"` // ok or unavailable
	// Reason says why the status is unavailable.
	Reason     string     `json:"reason,omitempty"`
	LeaseHeld  bool       `json:"lease_held"`
	Queue      int        `json:"queue"`
	LastSweep  *time.Time `json:"last_sweep,omitempty"`
	LastCommit *time.Time `json:"last_commit,omitempty"`
	// Unrouted counts the keys no route takes (or two take to different
	// tables) that the last listing found, and those announced since: a
	// routed serve (Config.Routes) only.
	Unrouted int `json:"unrouted,omitempty"`
	// Tables is each table's document, by name: a routed serve only.
	Tables map[string]Health `json:"tables,omitempty"`
}

func (h *health) setLease(held bool, why string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leaseHeld, h.lease = held, why
}

func (h *health) sweepDone(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sweepErr = ""
	if err != nil {
		h.sweepErr = err.Error()
		return
	}
	h.lastSweep = time.Now().UTC()
}

func (h *health) loadDone(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.loadErr = ""
	if err != nil {
		h.loadErr = err.Error()
	}
}

func (h *health) committed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastCommit = time.Now().UTC()
}

// report builds the document; ok tells the status code (200 or 503).
func (h *health) report(queue int) (Health, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := Health{Status: "ok", LeaseHeld: h.leaseHeld, Queue: queue}
	if !h.lastSweep.IsZero() {
		t := h.lastSweep
		r.LastSweep = &t
	}
	if !h.lastCommit.IsZero() {
		t := h.lastCommit
		r.LastCommit = &t
	}
	switch {
	case !h.leaseHeld && h.lease == "":
		r.Reason = "starting: the lease is not taken yet"
	case !h.leaseHeld:
		r.Reason = "the lease is not held: " + h.lease
	case h.sweepErr != "":
		r.Reason = "the last sweep failed: " + h.sweepErr
	case h.loadErr != "":
		r.Reason = "the last load failed: " + h.loadErr
	}
	if r.Reason != "" {
		r.Status = "unavailable"
	}
	return r, r.Reason == ""
}
