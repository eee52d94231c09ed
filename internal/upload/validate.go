package upload

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/decode"
)

// DefaultSampleRows is the number of data rows of a CSV or TSV file that
// Validate decodes (types, time column) when ValidateOptions.SampleRows is 0.
const DefaultSampleRows = decode.DefaultSampleRows

// ValidateOptions tune Validate. The zero value validates with the rules
// ingest uses to create a table from a file.
type ValidateOptions struct {
	// TimeColumn names the time column; "" means infer it as ingest does.
	TimeColumn string
	// TimeUnit is the unit of a numeric epoch time column: "", s, ms, us, ns.
	TimeUnit string
	// AssumeLocation is the zone of text times without an offset (ingest's
	// --assume-timezone); nil means UTC.
	AssumeLocation *time.Location
	// SampleRows is the number of CSV/TSV data rows decoded; 0 means
	// DefaultSampleRows.
	SampleRows int
	// CSV is how the CSV text is written (ingest's --csv-* settings), and
	// Columns the column types ingest is given (--column).
	CSV     decode.CSV
	Columns map[string]arrow.DataType
}

// Validate checks a landing file before it is uploaded, without any network
// access, so that a gateway learns about a broken file at the edge. It is
// decode.Check: the decoder ingest uses, with the options ingest uses to
// create a table from the file, on every record of a CSV/TSV file for its
// structure and on a sample of its rows for the values (see decode.Check
// for what is and is not checked). The same file gives the same reason
// here and in ingest's quarantine report.
//
// Every error is a *decode.FileError whose Key is path.
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
	return validate(ctx, path, f, fi.Size(), opts)
}

// validate is Validate on the size bytes of f: the file at path, or a copy
// of it in memory (path names the file in errors and gives its type).
func validate(ctx context.Context, path string, f io.ReaderAt, size int64, opts ValidateOptions) error {
	return decode.Check(ctx, decode.Source{Key: path, R: f, Size: size},
		decode.DecodeOptions{TimeColumn: opts.TimeColumn, TimeUnit: opts.TimeUnit, AssumeLocation: opts.AssumeLocation,
			CSV: opts.CSV, Columns: opts.Columns},
		decode.CheckOptions{SampleRows: opts.SampleRows})
}
