//go:build !unix

package ingest

import "errors"

// diskFree is unknown here: a download that does not fit fails when the
// disk is full.
func diskFree(string) (int64, error) { return 0, errors.New("free space unknown on this system") }
