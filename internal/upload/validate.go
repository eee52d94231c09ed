package upload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/timelake/timelake/internal/decode"
)

// DefaultSampleRows is the number of data rows of a CSV or TSV file that
// Validate decodes (types, time column) when ValidateOptions.SampleRows is 0.
const DefaultSampleRows = 1000

// Bounds that keep validation cheap on a small gateway.
const (
	// maxSampleBytes caps the decoded sample of a CSV/TSV file (whole rows,
	// at least one).
	maxSampleBytes = 4 << 20
	// parquetDecodeLimit: Parquet files up to this size are decoded fully;
	// larger ones only have their footer and schema checked.
	parquetDecodeLimit = 16 << 20
)

// ValidateOptions tune Validate. The zero value validates with the rules
// ingest uses to create a table from a file.
type ValidateOptions struct {
	// TimeColumn names the time column; "" means infer it as ingest does.
	TimeColumn string
	// TimeUnit is the unit of a numeric epoch time column: "", s, ms, us, ns.
	TimeUnit string
	// SampleRows is the number of CSV/TSV data rows decoded; 0 means
	// DefaultSampleRows.
	SampleRows int
}

// Validate checks a landing file before it is uploaded, without any network
// access, so that a gateway learns about a broken file at the edge:
//
//   - the type, from the name and first bytes (decode.DetectFormat);
//   - CSV/TSV (optionally gzipped): every record is read to check the
//     structure (quoting, same number of fields as the header, complete gzip
//     stream), and the header plus the first SampleRows rows are decoded with
//     decode.Decode (column names, time column, value types);
//   - Parquet: decoded fully up to 16 MiB, else its footer and schema.
//
// Every error is a *decode.FileError whose Key is path, with the data row
// (header excluded) and, for CSV structure errors, the line.
func Validate(ctx context.Context, path string, opts ValidateOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return &decode.FileError{Key: path, Reason: "cannot read file", Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return &decode.FileError{Key: path, Reason: "cannot read file", Err: err}
	}
	return validate(ctx, path, f, fi.Size(), nil, opts)
}

// validate is Validate on the size bytes of f: the file at path, or a copy
// of it in memory, then also passed as data (path names the file in errors
// and gives its type).
func validate(ctx context.Context, path string, f io.ReaderAt, size int64, data []byte, opts ValidateOptions) error {
	head := make([]byte, 4)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return &decode.FileError{Key: path, Reason: "cannot read file", Err: err}
	}
	format, gz, err := decode.DetectFormat(path, head[:n])
	if err != nil {
		return err
	}
	if size == 0 {
		return &decode.FileError{Key: path, Reason: "empty file"}
	}
	dopts := decode.DecodeOptions{TimeColumn: opts.TimeColumn, TimeUnit: opts.TimeUnit}
	if format == decode.FormatParquet {
		return validateParquet(ctx, path, f, size, dopts)
	}
	comma := ','
	if format == decode.FormatTSV {
		comma = '\t'
	}
	rows := opts.SampleRows
	if rows <= 0 {
		rows = DefaultSampleRows
	}
	if data != nil && !gz && size <= maxSampleBytes && bytes.Count(data, []byte{'\n'}) <= rows {
		// At most rows records after the header (a record ends at a newline)
		// in at most maxSampleBytes: the sample is the whole file, and
		// decoding it reads every record too. Only a failure needs the scan,
		// whose structure errors come first, worded with their line.
		dec, err := decode.Decode(ctx, decode.Source{Key: path, R: f, Size: size}, dopts)
		if err == nil {
			dec.Release()
			return nil
		}
		if _, serr := scanText(ctx, path, f, size, gz, comma, rows); serr != nil {
			return serr
		}
		return err
	}
	sampleEnd, err := scanText(ctx, path, f, size, gz, comma, rows)
	if err != nil {
		return err
	}
	// Decode the sample: a prefix of whole records of the decompressed text,
	// so row numbers are those of the file. Uncompressed, that prefix is
	// read in place.
	var sample io.ReaderAt = io.NewSectionReader(f, 0, sampleEnd)
	if gz {
		r, closer, err := textStream(path, f, size, gz)
		if err != nil {
			return err
		}
		defer closer.Close()
		b := make([]byte, sampleEnd)
		if _, err := io.ReadFull(r, b); err != nil {
			return &decode.FileError{Key: path, Reason: "cannot read file", Err: err}
		}
		sample = bytes.NewReader(b)
	}
	dec, err := decode.Decode(ctx, decode.Source{Key: path, R: sample, Size: sampleEnd}, dopts)
	if err != nil {
		return err
	}
	dec.Release()
	return nil
}

// textStream returns the decompressed bytes of a text file.
func textStream(path string, f io.ReaderAt, size int64, gz bool) (io.Reader, io.Closer, error) {
	var r io.Reader = io.NewSectionReader(f, 0, size)
	if !gz {
		return r, io.NopCloser(nil), nil
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, &decode.FileError{Key: path, Reason: "empty file"}
		}
		return nil, nil, &decode.FileError{Key: path, Reason: "cannot read gzip data", Err: err}
	}
	return zr, zr, nil
}

// scanText reads every record of a CSV/TSV file with constant memory and
// returns the byte offset (in the decompressed text) that ends the header and
// the first rows data rows, or maxSampleBytes worth of whole rows.
func scanText(ctx context.Context, path string, f io.ReaderAt, size int64, gz bool, comma rune, rows int) (int64, error) {
	r, closer, err := textStream(path, f, size, gz)
	if err != nil {
		return 0, err
	}
	defer closer.Close()
	// A buffer larger than the file is never filled: small files get one of
	// their size (the csv reader copes with lines longer than the buffer).
	buf := 64 << 10
	if !gz && size < int64(buf) {
		buf = int(size)
	}
	cr := csv.NewReader(bufio.NewReaderSize(r, buf))
	cr.Comma = comma
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return 0, &decode.FileError{Key: path, Reason: "empty file"}
	}
	if err != nil {
		return 0, textError(path, 0, 0, err)
	}
	width := len(header)
	sampleEnd := int64(-1)
	var row int64
	for {
		if row%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		_, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		row++
		if err != nil {
			return 0, textError(path, row, width, err)
		}
		if sampleEnd < 0 && (row == int64(rows) || cr.InputOffset() >= maxSampleBytes) {
			sampleEnd = cr.InputOffset()
		}
	}
	if row == 0 {
		return 0, &decode.FileError{Key: path, Reason: "no data rows"}
	}
	if sampleEnd < 0 {
		sampleEnd = cr.InputOffset()
	}
	return sampleEnd, nil
}

// textError words a CSV or gzip read error as ingest does (with the line).
func textError(path string, row int64, width int, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return &decode.FileError{Key: path, Row: row,
				Reason: fmt.Sprintf("wrong number of fields (the header has %d) at line %d", width, pe.Line)}
		}
		where := fmt.Sprintf("line %d", pe.Line)
		if row == 0 {
			where = "header, " + where
		}
		return &decode.FileError{Key: path, Row: row, Reason: fmt.Sprintf("malformed csv (%s): %v", where, pe.Err)}
	}
	if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &decode.FileError{Key: path, Reason: "cannot read gzip data (truncated or corrupt)", Err: err}
	}
	return &decode.FileError{Key: path, Row: row, Reason: "cannot read file", Err: err}
}

// validateParquet decodes small files fully and checks the footer and schema
// of large ones (a truncated Parquet file has no footer).
func validateParquet(ctx context.Context, path string, f io.ReaderAt, size int64, dopts decode.DecodeOptions) error {
	if size <= parquetDecodeLimit {
		dec, err := decode.Decode(ctx, decode.Source{Key: path, R: f, Size: size}, dopts)
		if err != nil {
			return err
		}
		dec.Release()
		return nil
	}
	pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, size))
	if err != nil {
		return &decode.FileError{Key: path, Reason: "not a readable parquet file", Err: err}
	}
	defer pf.Close()
	if pf.NumRows() == 0 {
		return &decode.FileError{Key: path, Reason: "no data rows"}
	}
	if _, err := pqarrow.FromParquet(pf.MetaData().Schema, nil, pf.MetaData().KeyValueMetadata()); err != nil {
		return &decode.FileError{Key: path, Reason: "cannot read parquet schema", Err: err}
	}
	return nil
}
