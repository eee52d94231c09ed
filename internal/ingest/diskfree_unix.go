//go:build unix

package ingest

import "golang.org/x/sys/unix"

// diskFree is the space an unprivileged process may still write in the
// file system of dir (statfs: available blocks times the block size).
func diskFree(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil // the field types differ between systems
}
