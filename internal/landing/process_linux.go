package landing

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// processIdentity reads what tells this boot and PID namespace of this
// host, and the start time of pid, from /proc (proc(5)).
func processIdentity(pid int) (start uint64, bootID, pidNS string) {
	if b, err := os.ReadFile("/proc/sys/kernel/random/boot_id"); err == nil {
		bootID = strings.TrimSpace(string(b))
	}
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		pidNS = ns
	}
	_, start = processRunning(pid)
	return start, bootID, pidNS
}

// processRunning reports whether pid runs (not a zombie) and its start time
// in clock ticks after boot (0 if unreadable).
func processRunning(pid int) (bool, uint64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return false, 0
	}
	if err != nil {
		return true, 0 // cannot tell: alive
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after it start past the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return true, 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), so field 22 (starttime) is f[19].
	if len(f) < 20 {
		return true, 0
	}
	if f[0] == "Z" || f[0] == "X" {
		return false, 0 // exited, not yet reaped
	}
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return true, start
}
