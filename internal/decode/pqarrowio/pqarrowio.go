// Package pqarrowio is the reader of Parquet files that ingest decodes
// with: arrow-go's pqarrow as the Reader of decode/arrowpq's format,
// registered with package decode (decode.SetParquetFormat) when this
// package is imported. Importing it is all a binary does to read Parquet
// files as the timelake binary does: every Parquet type, nested ones
// included, and the Parquet rejects file of --on-error skip-rows written.
// pqarrow is kept out of package decode and decode/arrowpq because it
// links arrow/flight and, with it, gRPC and protobuf (docs/performance.md,
// "The gateway binary"); timelake-gateway does not import this package,
// and checks a Parquet file with decode/arrowpq's own reader of flat
// columns, which refuses the files this one refuses
// (TestColumnReaderAgrees).
package pqarrowio

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/decode/arrowpq"
)

func init() {
	decode.SetParquetFormat(arrowpq.Format{Reader: Reader{}})
}

// Reader is pqarrow as an arrowpq.Reader.
type Reader struct{}

// Fields are the fields of pqarrow's schema manifest.
func (Reader) Fields(sc *schema.Schema, kv metadata.KeyValueMetadata) ([]arrow.Field, error) {
	m, err := pqarrow.NewSchemaManifest(sc, kv, &pqarrow.ArrowReadProperties{})
	if err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, len(m.Fields))
	for i, f := range m.Fields {
		fields[i] = *f.Field
	}
	return fields, nil
}

// Open opens pf with pqarrow.
func (Reader) Open(pf *file.Reader, batchRows int64, mem memory.Allocator) (arrowpq.File, error) {
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: batchRows}, mem)
	if err != nil {
		return nil, err
	}
	return openFile{fr: fr, rows: pf.NumRows()}, nil
}

// Write writes rows with pqarrow's file writer, zstd-compressed.
func (Reader) Write(w io.Writer, rows []arrow.RecordBatch) error {
	pw, err := pqarrow.NewFileWriter(rows[0].Schema(), w,
		parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		return fmt.Errorf("write rejects: %w", err)
	}
	for _, r := range rows {
		if err := pw.Write(r); err != nil {
			pw.Close()
			return fmt.Errorf("write rejects: %w", err)
		}
	}
	return pw.Close()
}

// openFile is a file opened by Reader.
type openFile struct {
	fr   *pqarrow.FileReader
	rows int64
}

func (f openFile) Schema() (*arrow.Schema, error) { return f.fr.Schema() }

func (f openFile) Records(ctx context.Context) (array.RecordReader, error) {
	return f.fr.GetRecordReader(ctx, nil, nil)
}

// ReadColumn reads leaf column i; a column that cannot be opened has no
// data to blame (nil).
func (f openFile) ReadColumn(ctx context.Context, i int, batch int64) (int64, error) {
	cr, err := f.fr.GetColumn(ctx, i)
	if err != nil {
		return 0, nil
	}
	defer cr.Release()
	for read := int64(0); read < f.rows; read += batch {
		chunk, err := cr.NextBatch(batch)
		if err != nil {
			return read, err
		}
		chunk.Release()
	}
	return f.rows, nil
}
