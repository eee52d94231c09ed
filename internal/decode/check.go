package decode

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"slices"
)

// Defaults of CheckOptions.
const (
	// DefaultSampleRows is the number of CSV/TSV data rows Check decodes.
	DefaultSampleRows = 1000
	// DefaultSampleBytes caps the decompressed text Check decodes (whole
	// rows, at least one).
	DefaultSampleBytes = 4 << 20
	// DefaultParquetDecodeLimit is the size up to which Check decodes a
	// Parquet file fully; larger ones have their footer and schema checked.
	DefaultParquetDecodeLimit = 16 << 20
)

// CheckOptions bound the work of Check, so that a small gateway can check a
// large file.
type CheckOptions struct {
	// SampleRows is the number of CSV/TSV data rows decoded; 0 means
	// DefaultSampleRows.
	SampleRows int
	// SampleBytes caps the decompressed CSV/TSV text decoded, and the
	// pieces a JSON file is decoded in (JSON is decoded whole); 0 means
	// DefaultSampleBytes.
	SampleBytes int64
	// ParquetDecodeLimit: Parquet files up to this many bytes are decoded
	// fully; 0 means DefaultParquetDecodeLimit.
	ParquetDecodeLimit int64
}

// CheckResult is what Check found in a file it would decode.
type CheckResult struct {
	// SetAside are the rows of the part of the file checked that ingest
	// would set aside under OnErrorSkipRows (the file's rows, in file
	// order; with a sample, only the sample's): the file loads without
	// them.
	SetAside []RejectedRow
	// Sampled is set when the values of only the first rows were checked
	// (a large CSV or TSV file: SampleRows, SampleBytes); RowsChecked
	// counts those rows. SetAside are then the sample's alone.
	Sampled     bool
	RowsChecked int64
}

// Check reports whether a landing file would decode, as Decode would decode
// it with opts, with bounded work and memory; it is what upload --validate
// runs on a gateway before sending a file. With opts.Target nil (the table
// is not known there) the file is decoded as ingest decodes the file that
// creates a table: columns and time column inferred, or the time column
// given, with the same time unit and zone. The error is the one Decode
// returns for the same problem, word for word:
//
//   - the whole file: its type (DetectFormat), its start (encodings other
//     than UTF-8, other compression formats, binary content, an Excel sep=
//     line, CR line ends), the header (names, duplicates, UTF-8);
//   - CSV/TSV, every record: quoting, the number of fields, complete gzip
//     data without trailing bytes (constant memory);
//   - CSV/TSV values of the first SampleRows data rows (at most SampleBytes
//     of text): the time column, numbers under the text number rules, UTF-8,
//     local times under opts.AssumeLocation, unnamed trailing columns;
//   - Parquet: decoded fully up to ParquetDecodeLimit bytes, else its
//     footer, schema and column names.
//
// Not checked: values after the sample, and whether values fit the types of
// an existing table (only ingest knows the table: a column that the sample
// makes a string may be a double in the table). A file without data rows is
// valid (ingest loads it as 0 rows once the table exists). When a file has
// several problems, Check reports a structural one (a record) found anywhere
// before a value problem in the sample, where Decode reports the first
// batch's.
//
// A panic while the file is read refuses the file (IsPanic), as in Decode.
// Under OnErrorSkipRows the result names the rows set aside.
func Check(ctx context.Context, src Source, opts DecodeOptions, co CheckOptions) (res CheckResult, err error) {
	defer recoverTo(&err, src.Key, "checking the file", nil)
	if co.SampleRows <= 0 {
		co.SampleRows = DefaultSampleRows
	}
	if co.SampleBytes <= 0 {
		co.SampleBytes = DefaultSampleBytes
	}
	if co.ParquetDecodeLimit <= 0 {
		co.ParquetDecodeLimit = DefaultParquetDecodeLimit
	}
	ro, err := resolveOptions(src.Key, opts)
	if err != nil {
		return res, err
	}
	head := make([]byte, 8)
	n, err := src.R.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return res, &FileError{Key: src.Key, Reason: "cannot read file", Err: err}
	}
	format, gz, err := detectFormat(src.Key, head[:n], opts.Format)
	if err != nil {
		return res, err
	}
	if format == FormatJSON {
		return checkJSON(ctx, src, opts, co)
	}
	whole := format == FormatParquet && src.Size <= co.ParquetDecodeLimit
	if format != FormatParquet && !gz && src.Size <= co.SampleBytes {
		// A small file of at most SampleRows records (a record ends at a
		// newline) is its own sample.
		lines, err := countLines(src)
		if err != nil {
			return res, &FileError{Key: src.Key, Reason: "cannot read file", Err: err}
		}
		whole = lines <= int64(co.SampleRows)+1
	}
	if whole || src.Size == 0 {
		return checkDecode(ctx, src, opts)
	}
	if format == FormatParquet {
		return res, checkParquetFooter(ctx, ro, src)
	}
	if format == FormatTSV {
		ro.comma, ro.tsv = '\t', true
	}
	end, err := scanText(ctx, ro, src, gz, co)
	if err != nil {
		return res, err
	}
	// The sample is a prefix of whole records of the decompressed text, so
	// rows and lines are those of the file. Uncompressed, it is read in
	// place.
	sample := Source{Key: src.Key, R: io.NewSectionReader(src.R, 0, end), Size: end}
	if gz {
		r, c, err := openTextStream(ro, src, gz, false)
		if err != nil {
			return res, err
		}
		defer c.Close()
		b := make([]byte, end)
		copy(b, r.prefix)
		if _, err := io.ReadFull(r, b[len(r.prefix):]); err != nil {
			return res, textReadError(ro, 0, 0, err)
		}
		sample.R = bytes.NewReader(b)
	}
	res, err = checkDecode(ctx, sample, opts)
	res.Sampled = true
	return res, err
}

// checkJSON decodes a whole JSON file, every object and value, in pieces
// of at most co.SampleBytes decoded bytes, each released before the next:
// the objects are checked whole anyway (the columns are the keys of all of
// them), so the values cost little more.
func checkJSON(ctx context.Context, src Source, opts DecodeOptions, co CheckOptions) (CheckResult, error) {
	opts.PieceBytes = co.SampleBytes
	var res CheckResult
	err := DecodeEach(ctx, src, opts, func(d *Decoded) error {
		res.SetAside = append(res.SetAside, d.Rejected...)
		d.Release()
		return nil
	})
	if errors.Is(err, ErrNoRows) {
		return CheckResult{}, nil
	}
	return res, err
}

// checkDecode decodes src and releases the result; a file without data rows
// is valid.
func checkDecode(ctx context.Context, src Source, opts DecodeOptions) (CheckResult, error) {
	d, err := Decode(ctx, src, opts)
	if errors.Is(err, ErrNoRows) {
		return CheckResult{}, nil
	}
	var res CheckResult
	if d != nil {
		res.SetAside, res.RowsChecked = d.Rejected, d.Rows+int64(len(d.Rejected))
	}
	d.Release()
	return res, err
}

// countLines counts the '\n' of a file.
func countLines(src Source) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for off := int64(0); off < src.Size; off += int64(len(buf)) {
		m, err := src.R.ReadAt(buf[:min(int64(len(buf)), src.Size-off)], off)
		n += int64(bytes.Count(buf[:m], []byte{'\n'}))
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
	}
	return n, nil
}

// scanText reads every record of a text file with constant memory, checking
// what Decode checks before the values (the start of the file, the header,
// quoting, field counts, gzip data), and returns the offset in the
// decompressed text (byte order mark and separator hint included) that
// ends the header and the first SampleRows data rows, or SampleBytes of
// whole rows (at least one).
func scanText(ctx context.Context, ro *resolved, src Source, gz bool, co CheckOptions) (int64, error) {
	r, c, err := openTextStream(ro, src, gz, true)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	// The line ends are checked as Decode checks them; quoted CRLFs are
	// left as they are so that offsets stay those of the text.
	ends := newLineEnds(r, ro.comma, false)
	cr := csv.NewReader(ends)
	cr.Comma = ro.comma
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return 0, &FileError{Key: ro.key, Reason: "empty file (no header line)"}
	}
	if err != nil {
		return 0, textReadError(ro, 0, 0, err)
	}
	width := len(header)
	if err := checkHeaderSeparator(ro, header); err != nil {
		return 0, err
	}
	if header, err = renameColumns(ro, slices.Clone(header)); err != nil {
		return 0, err
	}
	cols := newTextColumns(header) // before the next Read reuses header
	if err := checkNames(ro.key, cols.out); err != nil {
		return 0, err
	}
	bom := int64(len(r.prefix))
	end := int64(-1)
	var row int64
	for {
		if row%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, &FileError{Key: ro.key, Reason: "decoding cancelled", Err: err}
			}
		}
		_, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		row++
		if err != nil {
			err := textReadError(ro, row, width, ends.explain(err))
			var fe *FileError
			if errors.As(err, &fe) {
				addLine(ro, src, gz, cols.read, fe)
			}
			return 0, err
		}
		if end < 0 && (row == int64(co.SampleRows) || cr.InputOffset()+bom >= co.SampleBytes) {
			end = cr.InputOffset() + bom
		}
	}
	if end < 0 {
		end = cr.InputOffset() + bom
	}
	return end, nil
}

// checkParquetFooter opens a Parquet file and reads its schema, as Decode
// does first, without reading data.
func checkParquetFooter(ctx context.Context, ro *resolved, src Source) error {
	pa, err := openParquetFile(ctx, ro, src)
	if err != nil {
		return err
	}
	defer pa.Close()
	return checkNames(ro.key, pa.Schema())
}
