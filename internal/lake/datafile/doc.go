// Package datafile owns the data files of appends and compaction: the
// order of a table's rows inside them (Order, SortedRows: by partition of
// the time column, series key columns and time, as docs/table-format.md
// asks), how they are laid out as Parquet files (Layout: the file schema,
// the writer properties from the table's properties, the row group rule),
// the writer that writes them (Write), the concurrent writers over row
// ranges of one append (WritePlan, WriteRanges), and the zstd codec of
// their pages, registered with arrow-go for the whole process (zstd.go).
//
// The data files are written with arrow-go's Parquet writer and
// iceberg-go's DataFileFromMetadata (the manifest entry's statistics),
// instead of iceberg-go's WriteRecords, whose writer decides row groups by
// a row count and bytes only and has no page index: a reader prunes row
// groups by their statistics, so a row group holds whole series (as many
// as fit in write.parquet.row-group-limit rows, 122,880 by default:
// DuckDB's own row group size), a series longer than that fills row
// groups of its own, and every column chunk has statistics and a page
// index (docs/performance.md, "How data files are laid out"). A data file
// of at most 8,192 rows is written without pqarrow's column writers
// (smallfile.go): their set-up per file was half a millisecond of CPU
// whatever the rows, half of an ingest of small appends; its pages are
// still laid out, compressed and described by arrow-go's page writer,
// metadata builders and statistics, and hold what pqarrow would write for
// the same rows (docs/performance.md, "Small data files"). Tables whose
// partition spec is not a time transform of the time column, with nested
// columns, or of a format version other than 2 are written by iceberg-go's
// writer (NewLayout returns nil for them).
//
// It is separate from internal/lake because none of it needs a table
// handle or the commit protocol: it takes rows, a table version's metadata
// and a file system, and returns data files. The lake reads the order from
// the table's contract, chooses the writer, creates the objects of an S3
// warehouse (internal/lake/putfile.go) and commits the files it gets
// (internal/lake/append.go, compact.go); how rows are ordered and how a
// data file is laid out is changed here, and tested without a table.
package datafile
