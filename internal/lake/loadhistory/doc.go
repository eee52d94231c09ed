// Package loadhistory owns the load history's store as files: the load
// record (Record), the segment file format (immutable zstd Parquet files of
// records, their names and size tiers, EncodeSegment, ScanSegment), the
// planning of the next list of segments (PlanSegments: window expiry and
// the merging of a full tier), the index of a segment (the fingerprints of
// its keys and content hashes, and the file format of that index) and the
// on-disk cache of segments and indexes (Cache).
//
// It is separate from internal/lake because none of it needs a table: it
// reads and writes bytes and folders, never the object store, the catalog
// or a table version. The lake names the segments in a table property,
// reads them through its store, and changes their list through the commit
// protocol (internal/lake/history.go); what a segment holds and how it is
// cached is changed here.
package loadhistory
