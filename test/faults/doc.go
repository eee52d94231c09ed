// Package faults is timelake's fault-injection suite (docs/faults.md). Its
// tests run ingest, upload and tables expire against the real S3 test
// server behind the s3fault proxy (lost responses on every kind of write,
// 5xx and SlowDown storms, delays) and kill -9 the timelake binary at
// random points, then check the invariants with a reader of their own: no
// row lost, none twice, no run blocked by its own lease, no file left
// behind that the run should have removed.
//
// go test runs the short version (./scripts/test.sh); bench/faults.sh runs
// the long one and prints the figures (trials, faults injected, rows
// checked).
package faults
