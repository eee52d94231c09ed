package loadhistory

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/google/uuid"
)

// The file names of segments start with HistoryPrefix (the load history)
// or OutcomePrefix (the outcome log).
const (
	HistoryPrefix = "_load-history-"
	OutcomePrefix = "_load-outcomes-"
)

// SegmentName is the file name of a new segment of the log whose names
// start with prefix: <prefix><newest load time in ms>-<records>-<uuid>.parquet,
// so that merging and window expiry can be planned from the names alone.
// The leading "_" of the prefixes hides it from the orphan file removal of
// other Iceberg tools (Spark's remove_orphan_files skips hidden names), to
// which it is a file no snapshot references.
func SegmentName(prefix string, newest time.Time, records int) string {
	return fmt.Sprintf("%s%d-%d-%s.parquet", prefix, newest.UnixMilli(), records, uuid.New())
}

// SegmentInfo is what a segment's name says about it.
type SegmentInfo struct {
	Name    string
	Newest  time.Time
	Records int
}

// ParseSegmentName reads a name SegmentName made (of either prefix); ok is
// false for any other name.
func ParseSegmentName(name string) (SegmentInfo, bool) {
	rest, ok := strings.CutPrefix(name, HistoryPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(name, OutcomePrefix)
	}
	if !ok || !strings.HasSuffix(rest, ".parquet") {
		return SegmentInfo{}, false
	}
	parts := strings.SplitN(rest, "-", 3)
	if len(parts) != 3 {
		return SegmentInfo{}, false
	}
	ms, err1 := strconv.ParseInt(parts[0], 10, 64)
	n, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || n < 0 {
		return SegmentInfo{}, false
	}
	return SegmentInfo{Name: name, Newest: time.UnixMilli(ms).UTC(), Records: n}, true
}

// segmentSchema is the columns of a segment.
var segmentSchema = arrow.NewSchema([]arrow.Field{
	{Name: "key", Type: arrow.BinaryTypes.String},
	{Name: "size", Type: arrow.PrimitiveTypes.Int64},
	{Name: "sha256", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "content_sha256", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "rows", Type: arrow.PrimitiveTypes.Int64},
	{Name: "snapshot_id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "loaded_at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	// Added later, null in older segments (readers that do not know them
	// skip them: columns are read by name).
	{Name: "landed_at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "max_row_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "loaded_by", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "reason", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "same_as", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "quarantined_to", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "rejected_rows", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// EncodeSegment writes records (sorted by key here) as a zstd Parquet file.
func EncodeSegment(records []Record) ([]byte, error) {
	recs := slices.Clone(records)
	slices.SortFunc(recs, func(a, b Record) int { return cmp.Compare(a.Key, b.Key) })
	b := array.NewRecordBuilder(memory.DefaultAllocator, segmentSchema)
	defer b.Release()
	optString := func(i int, v string) {
		bld := b.Field(i).(*array.StringBuilder)
		if v == "" {
			bld.AppendNull()
		} else {
			bld.Append(v)
		}
	}
	optTime := func(i int, v time.Time, unit arrow.TimeUnit) {
		bld := b.Field(i).(*array.TimestampBuilder)
		switch {
		case v.IsZero():
			bld.AppendNull()
		case unit == arrow.Microsecond:
			bld.Append(arrow.Timestamp(v.UnixMicro()))
		default:
			bld.Append(arrow.Timestamp(v.UnixMilli()))
		}
	}
	for _, r := range recs {
		b.Field(0).(*array.StringBuilder).Append(r.Key)
		b.Field(1).(*array.Int64Builder).Append(r.Size)
		optString(2, r.SHA256)
		optString(3, r.ContentSHA256)
		b.Field(4).(*array.Int64Builder).Append(r.Rows)
		b.Field(5).(*array.Int64Builder).Append(r.SnapshotID)
		b.Field(6).(*array.TimestampBuilder).Append(arrow.Timestamp(r.LoadedAt.UnixMilli()))
		optTime(7, r.LandedAt, arrow.Millisecond)
		optTime(8, r.MaxRowTime, arrow.Microsecond)
		optString(9, r.LoadedBy)
		optString(10, r.Status)
		optString(11, r.Reason)
		optString(12, r.SameAs)
		optString(13, r.QuarantinedTo)
		if r.RejectedRows > 0 {
			b.Field(14).(*array.Int64Builder).Append(r.RejectedRows)
		} else {
			b.Field(14).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(segmentSchema, &buf,
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(true)),
		pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeSegment reads a segment's records.
func DecodeSegment(ctx context.Context, body []byte) ([]Record, error) {
	var out []Record
	err := ScanSegment(ctx, body, func(r Record) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// segmentBatchRows is how many records ScanSegment decodes at a time.
const segmentBatchRows = 64 * 1024

// ScanSegment calls fn with each record of a segment, in file order,
// holding one batch of segmentBatchRows decoded records at a time.
// Columns are read by name; one a segment lacks (written before it was
// added) reads as zero. Errors: not a segment (no key column), a Parquet
// error, fn's.
func ScanSegment(ctx context.Context, body []byte, fn func(Record) error) error {
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: segmentBatchRows}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	col := func(rec arrow.RecordBatch, name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) == 0 {
			return nil
		}
		return rec.Column(idx[0])
	}
	for rr.Next() {
		rec := rr.RecordBatch()
		keys, ok := col(rec, "key").(*array.String)
		if !ok {
			return errors.New("no key column")
		}
		str := func(name string) func(int) string {
			a, ok := col(rec, name).(*array.String)
			return func(i int) string {
				if ok && a.IsValid(i) {
					return a.Value(i)
				}
				return ""
			}
		}
		i64 := func(name string) func(int) int64 {
			a, ok := col(rec, name).(*array.Int64)
			return func(i int) int64 {
				if ok && a.IsValid(i) {
					return a.Value(i)
				}
				return 0
			}
		}
		ts := func(name string) func(int) time.Time {
			a, ok := col(rec, name).(*array.Timestamp)
			return func(i int) time.Time {
				if !ok || !a.IsValid(i) {
					return time.Time{}
				}
				if a.DataType().(*arrow.TimestampType).Unit == arrow.Microsecond {
					return time.UnixMicro(int64(a.Value(i))).UTC()
				}
				return time.UnixMilli(int64(a.Value(i))).UTC()
			}
		}
		size, sha, content, rows, snap, at := i64("size"), str("sha256"), str("content_sha256"), i64("rows"), i64("snapshot_id"), ts("loaded_at")
		landed, maxRow, by := ts("landed_at"), ts("max_row_time"), str("loaded_by")
		status, reason, sameAs, quarantined := str("status"), str("reason"), str("same_as"), str("quarantined_to")
		for i := range keys.Len() {
			r := Record{Key: keys.Value(i), Size: size(i), SHA256: sha(i), ContentSHA256: content(i), Rows: rows(i),
				SnapshotID: snap(i), LoadedAt: at(i), LandedAt: landed(i), MaxRowTime: maxRow(i), LoadedBy: by(i),
				Status: status(i), Reason: reason(i), SameAs: sameAs(i), QuarantinedTo: quarantined(i),
				RejectedRows: i64("rejected_rows")(i)}
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	return rr.Err()
}
