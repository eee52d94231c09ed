package landing

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
)

// Holder identifies the run that holds a lease. Token is unique per run
// (host:pid:random run id), so a run recognises its own lease even when it
// cannot know whether its write landed, and two runs of one process (or a
// process whose PID was reused) are never confused. Host, PID, Start,
// BootID and PIDNamespace tell a run on the same host whether the holder's
// process still exists.
type Holder struct {
	Token string `json:"holder"`
	// Kind is what holds the lease: HolderIngest or HolderServe; "" in
	// leases of earlier timelake versions.
	Kind string `json:"kind,omitempty"`
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Start is the process start time in clock ticks after boot (Linux
	// /proc/<pid>/stat field 22); 0 when unknown.
	Start uint64 `json:"process_start,omitempty"`
	// BootID is the kernel's boot id (Linux /proc/sys/kernel/random/boot_id):
	// the same host name with another boot id is another machine or boot.
	BootID string `json:"boot_id,omitempty"`
	// PIDNamespace names the PID namespace (Linux /proc/self/ns/pid), so
	// that two containers sharing a host name and a kernel are told apart.
	PIDNamespace string `json:"pid_ns,omitempty"`
}

// Kinds of lease holders (Holder.Kind).
const (
	HolderIngest = "ingest" // one `timelake ingest` run
	HolderServe  = "serve"  // a `timelake serve` process, for as long as it runs
)

// NewHolder describes this process with a fresh random run id.
func NewHolder() Holder {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown-host"
	}
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	pid := os.Getpid()
	h := Holder{
		Token: host + ":" + strconv.Itoa(pid) + ":" + hex.EncodeToString(b[:]),
		Host:  host,
		PID:   pid,
	}
	h.Start, h.BootID, h.PIDNamespace = processIdentity(pid)
	return h
}

// String is the token.
func (h Holder) String() string { return h.Token }

// onThisHost reports whether h ran on this host as far as can be told:
// the same host name, boot id and PID namespace, all known.
func (h Holder) onThisHost(self Holder) bool {
	return h.PID > 0 && h.Host != "" && h.Host == self.Host && h.BootID != "" && h.BootID == self.BootID &&
		h.PIDNamespace == self.PIDNamespace
}

// gone reports whether h's process is known to have ended: h ran on this
// host (same host name, boot id and PID namespace, all known) and its PID
// is no longer running, or now runs a process that started at another
// time. Whatever cannot be checked counts as alive.
func (h Holder) gone(self Holder) bool {
	if !h.onThisHost(self) {
		return false
	}
	running, start := processRunning(h.PID)
	if !running {
		return true
	}
	return h.Start != 0 && start != 0 && start != h.Start
}

// ProcessGone reports whether the process pid that started at start
// (clock ticks after boot, as Holder.Start; 0 when unknown) has ended on
// this host: the PID no longer runs, or runs a process started at another
// time. What cannot be checked counts as running.
func ProcessGone(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	running, now := processRunning(pid)
	if !running {
		return true
	}
	return start != 0 && now != 0 && now != start
}
