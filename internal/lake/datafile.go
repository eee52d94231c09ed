package lake

import (
	"context"
	"errors"
	"io"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/datafile"
)

// The data files of appends and compaction are sorted and written by
// internal/lake/datafile; here a table's view gives it the order, the
// layout and the file system.

// DefaultRowGroupRows is the most rows of a row group in the data files
// timelake writes when write.parquet.row-group-limit is not set.
const DefaultRowGroupRows = datafile.DefaultRowGroupRows

// CheckParquetCompression refuses table properties whose Parquet codec or
// level no data file can be written with (datafile.ParquetCompression):
// tables alter checks them before it commits, every writer before it
// writes.
func CheckParquetCompression(props iceberg.Properties) error {
	_, _, err := datafile.ParquetCompression(props)
	return err
}

// CanonicalParquetCodec is the spelling of a write.parquet.compression-codec
// value that every writer of a table reads (datafile.CanonicalCodec):
// tables alter stores that one.
func CanonicalParquetCodec(value string) string { return datafile.CanonicalCodec(value) }

// order is the order of the rows of the contract's table in its data
// files.
func (c Contract) order() datafile.Order {
	return datafile.Order{TimeColumn: c.TimeColumn, SeriesKey: c.SeriesKey, Partition: c.Chunk.bucket}
}

// newDataFileLayout returns the layout of v's data files, or nil when the
// table is written by iceberg-go's writer (datafile.NewLayout).
func newDataFileLayout(v tableView) (*datafile.Layout, error) {
	return datafile.NewLayout(v.meta.Write(), v.arrowSc, v.contract.order(), v.contract.Chunk.transform())
}

// writeRecords writes recs (batches of v's Arrow schema, sorted by
// partition, series key and time, none spanning two partitions; each is
// released) as data files, one or more per partition, and yields each
// file once it is closed (datafile.Write; iceberg-go's writer for the
// tables datafile does not lay out). On an error the files already
// yielded are the caller's to remove.
func (t *Table) writeRecords(ctx context.Context, v tableView, recs iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[iceberg.DataFile, error] {
	l, err := newDataFileLayout(v)
	if err != nil {
		return func(yield func(iceberg.DataFile, error) bool) { yield(nil, err) }
	}
	return t.writeLaidOut(ctx, v, l, recs)
}

// writeLaidOut is writeRecords with v's layout l (newDataFileLayout; nil:
// iceberg-go's writer), for a caller that writes several ranges.
func (t *Table) writeLaidOut(ctx context.Context, v tableView, l *datafile.Layout, recs iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[iceberg.DataFile, error] {
	if l == nil {
		// Each batch as datafile.Write gives it to arrow-go too: "" in
		// its statistics.
		fixed := func(yield func(arrow.RecordBatch, error) bool) {
			for rec, err := range recs {
				if rec != nil {
					r := datafile.WithValueBytes(rec)
					rec.Release()
					rec = r
				}
				if !yield(rec, err) {
					return
				}
			}
		}
		return table.WriteRecords(ctx, v.iceberg, v.arrowSc, fixed,
			table.WithClusteredWrite(), table.WithRecordBatchBufferSize(datafile.BufferBatches))
	}
	return func(yield func(iceberg.DataFile, error) bool) {
		fs, err := t.fsF(ctx) // confined to the table's location
		if err != nil {
			yield(nil, err)
			return
		}
		wfs, ok := fs.(icebergio.WriteFileIO)
		if !ok {
			yield(nil, errors.New("the warehouse's file system cannot write files"))
			return
		}
		for df, err := range datafile.Write(ctx, l, wfs, t.createDataFile(wfs), recs) {
			if !yield(df, err) || err != nil {
				return
			}
		}
	}
}

// createDataFile starts the object of a data file: a putFile in an S3
// warehouse, else the table's file system's writer. A path outside the
// table's location (the metadata's location is untrusted) is
// ErrOutsideTable: nothing is written there.
func (t *Table) createDataFile(fs icebergio.WriteFileIO) datafile.CreateFunc {
	return func(ctx context.Context, path string) (io.WriteCloser, error) {
		lk := t.lake
		rel, err := lk.tableRel(t.name, path)
		if err != nil {
			return nil, err
		}
		if lk.loc.IsS3() {
			spill := func() (io.WriteCloser, error) { return fs.Create(path) }
			return newPutFile(ctx, lk.store, catalog.TablePrefix(t.name)+rel, spill), nil
		}
		return fs.Create(path)
	}
}
