package ingest

// SetFreeBytes makes the download folder report free bytes of space until
// the returned restore is called.
func SetFreeBytes(free int64) (restore func()) {
	was := freeBytes
	freeBytes = func(string) (int64, error) { return free, nil }
	return func() { freeBytes = was }
}

// SetFaultHook calls hook with the stage ("decode", "write") and key of
// every file loaded until the returned restore is called.
func SetFaultHook(hook func(stage, key string)) (restore func()) {
	was := faultHook
	faultHook = hook
	return func() { faultHook = was }
}
