//go:build linux

package storage

import (
	"io/fs"
	"syscall"
	"time"
)

// ChangeTime is the status change time (ctime) of a local file: set by this
// host's clock on every write, whatever time the writer gave its
// modification time; zero when fi does not carry it.
func ChangeTime(fi fs.FileInfo) time.Time {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec).UTC()
}
