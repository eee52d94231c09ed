//go:build !unix

package storage

import "os"

// openReadFlags open a file of a LocalStore for reading.
const openReadFlags = os.O_RDONLY
