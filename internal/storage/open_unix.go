//go:build unix

package storage

import (
	"os"
	"syscall"
)

// openReadFlags open a file of a LocalStore for reading without blocking on
// a named pipe (O_NONBLOCK changes nothing for a regular file).
const openReadFlags = os.O_RDONLY | syscall.O_NONBLOCK
