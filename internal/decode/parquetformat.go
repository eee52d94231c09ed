package decode

import (
	"context"
	"errors"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A Parquet file is read through a ParquetFormat, registered by the
// package that implements it (SetParquetFormat): package decode itself
// imports no Parquet library, so that a binary links only the one it
// registers (docs/architecture.md, "Import rules"). decode/arrowpq reads
// files with arrow-go's low-level parquet/file and parquet/schema packages
// (its own reader of flat columns) and registers itself when imported;
// decode/pqarrowio builds on it and reads the values with arrow-go's
// pqarrow instead, which reads every Parquet type and writes the Parquet
// rejects file; decode/pqlite, the gateway's, reads flat columns as
// decode/arrowpq's own reader does without arrow-go's parquet packages
// (so without arrow/compute). The format speaks Arrow and this package's types: what is
// Arrow alone (the types a stored ARROW:schema refines, the appenders of
// Parquet values to Arrow builders, the page checksum walk, the LZ4 page
// framings, the INT96 range) stays here for every format to share, and
// the refusals a format builds use this package's wording (FileError,
// ParquetProblem, Recovered).

// ParquetFormat reads and writes Parquet files as Arrow record batches.
type ParquetFormat interface {
	// Open reads the footer of src and the Arrow schema of its columns,
	// refusing a file whose footer counts do not add up (a *FileError).
	// An error that is not a *FileError says the footer does not read at
	// all; Decode then says why (cut short, bytes after its end). The
	// caller closes the file.
	Open(ctx context.Context, src Source, opts ParquetOpenOptions) (ParquetFile, error)
	// ValueBytes estimates the Arrow bytes of src's values from its footer
	// alone (ParquetValueBytes); ok is false when the footer does not read.
	ValueBytes(src Source) (n int64, ok bool)
	// FooterReads reports whether the first size bytes of r are a Parquet
	// file whose footer reads.
	FooterReads(r io.ReaderAt, size int64) bool
	// Write writes rows (batches of one schema) as a zstd Parquet file.
	Write(w io.Writer, rows []arrow.RecordBatch) error
}

// ParquetOpenOptions are what a ParquetFormat opens a file with.
type ParquetOpenOptions struct {
	// Key names the file in refusals.
	Key string
	// Mem allocates the values read.
	Mem memory.Allocator
	// BatchRows is the most rows of a batch.
	BatchRows int
	// PieceRows is the most rows of a batch whose rows take rowBytes each
	// (DecodeOptions.PieceBytes); nil: no bound.
	PieceRows func(rowBytes int64) int64
}

// ParquetFile is a Parquet file opened by a ParquetFormat.
type ParquetFile interface {
	// Schema is the Arrow schema the file's values are read with (ENUM
	// columns as text).
	Schema() *arrow.Schema
	// NumRows is the footer's row count.
	NumRows() int64
	// Verify checks what is checked before the values are read: values of
	// INT(8) and INT(16) columns within their type, and page checksums.
	Verify(ctx context.Context) error
	// Records reads every row of every column.
	Records(ctx context.Context) (array.RecordReader, error)
	// ReadColumn reads leaf column i alone, batch rows at a time, to its
	// end; read is the number of rows read before the batch that failed.
	ReadColumn(ctx context.Context, i int, batch int64) (read int64, err error)
	// LocateReadError is the refusal of the file once reading its values
	// failed with err: the value, row and column where they can be found.
	LocateReadError(ctx context.Context, err error) error
	// RowGroupAt says which row group the row after the first rows starts
	// in: "row group g of n, reading from row r"; "" past the last.
	RowGroupAt(rows int64) string
	// Close releases the file.
	Close() error
}

// parquetFormat is the registered ParquetFormat (SetParquetFormat).
var parquetFormat ParquetFormat

// SetParquetFormat makes f the format Parquet files are read with (nil:
// none, every Parquet file is refused) and returns the one it replaces.
// It is meant for an init function (decode/arrowpq, decode/pqarrowio,
// decode/pqlite) and
// for tests, not for use while files are decoded.
func SetParquetFormat(f ParquetFormat) ParquetFormat {
	prev := parquetFormat
	parquetFormat = f
	return prev
}

// noParquetFormat is the reason a Parquet file is refused by a binary that
// registers no ParquetFormat.
const noParquetFormat = "this binary reads no Parquet files (no Parquet format is registered: import package decode/pqlite, decode/arrowpq or decode/pqarrowio)"

// errNoParquetFormat is the error of writing Parquet without a format.
var errNoParquetFormat = errors.New(noParquetFormat)

// ParquetProblem is the refusal of a Parquet file of key that cannot be
// read as it is (IsUnreadable), for a ParquetFormat's refusals.
func ParquetProblem(key, column, reason string, err error) *FileError {
	return parquetProblem(key, column, reason, err)
}
