// Package loadhistory owns the load history's files: the load record
// (Record), the segment file format (immutable zstd Parquet files of
// records and their names: EncodeSegment, ScanSegment, SegmentName), the
// plan of a log's next list of segments (PlanSegments: window expiry, size
// tiers, the merge of a full tier), the index of a segment (the
// fingerprints of its keys and content hashes, and the file format of that
// index) and the on-disk cache of one table's segments and indexes (Cache).
// The outcome log's segments (files found duplicates or rejected) have the
// same format.
//
// It is separate from internal/lake because none of it needs a table: it
// reads and writes bytes and local folders, never the object store, the
// catalog or a table version. The lake names a table's segments in a table
// property, reads them through its store, and changes their list through
// the commit protocol (internal/lake/history.go); what a segment holds and
// how it is cached is changed here, and tested without a table.
package loadhistory
