// Package interop proves that the tables timelake writes are real Apache
// Iceberg tables, by reading them through code that shares nothing with
// iceberg-go (docs/interop.md):
//
//   - icebird, a pure-JavaScript Iceberg reader (its own Avro decoder for
//     manifests, hyparquet for Parquet), run by the Node harness in icebird/;
//   - DuckDB (read_parquet, parquet_metadata, parquet_schema) on each data
//     file: row counts, sort order, compression, time type, field ids, and
//     the column bounds the manifests claim.
//
// The expected rows come from the source files, parsed here independently of
// timelake's own decoder (CSV with encoding/csv, Parquet with DuckDB), and
// from a scan through iceberg-go.
//
// It is a separate Go module (test/interop/go.mod) so that the product never
// links DuckDB; it reaches timelake's internal packages through a replace
// directive. Run it with ./scripts/test.sh, or by hand:
//
//	(cd test/interop/icebird && npm ci)
//	bash scripts/s3-server.sh start /tmp/s3-interop && . /tmp/s3-interop/env
//	(cd test/interop && go test ./...)
package interop
