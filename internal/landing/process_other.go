//go:build !linux

package landing

// processIdentity knows nothing off Linux: leases of dead runs there
// expire by their TTL (or --break-lease).
func processIdentity(int) (uint64, string, string) { return 0, "", "" }

// processRunning cannot tell off Linux: every process counts as running.
func processRunning(int) (bool, uint64) { return true, 0 }
