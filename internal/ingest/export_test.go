package ingest

// SetFreeBytes makes the download folder report free bytes of space until
// the returned restore is called.
func SetFreeBytes(free int64) (restore func()) {
	was := freeBytes
	freeBytes = func(string) (int64, error) { return free, nil }
	return func() { freeBytes = was }
}
