package upload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/profile"
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
	// Target is the table's schema, when known (Rules): the file is then
	// decoded into it as ingest decodes it, with Evolve, OnError,
	// MaxBadRows and Renames as decode.DecodeOptions has them.
	Target     *arrow.Schema
	Evolve     decode.Evolution
	OnError    decode.OnError
	MaxBadRows decode.MaxBadRows
	Renames    map[string]string
	// Format is the format of a file whose name has no known extension
	// (a source profile's format setting).
	Format decode.Format
}

// Rules are the poller's rules for a gateway's files: the table's schema
// and time column, and the settings it reads a key with: the table's
// source profiles (Profiles) and load properties (Properties), or one
// exported profile (Exported), which every key must match. From upload
// given --warehouse and --table, or --profile-file.
type Rules struct {
	Target     *arrow.Schema
	TimeColumn string
	Profiles   profile.Set
	Properties map[string]string
	Exported   *profile.Profile
	// ExportedFrom names the file Exported and Target were read from and
	// when they were exported, for the errors a stale export explains
	// (staleExport).
	ExportedFrom string
}

// staleExport adds to a refusal of a column the table's schema lacks,
// when that schema is an exported profile's (r.ExportedFrom), that the
// table may have gained the column since the export.
func staleExport(r *Rules, err error) error {
	var fe *decode.FileError
	if r == nil || r.ExportedFrom == "" || !decode.IsNewColumns(err) || !errors.As(err, &fe) {
		return err
	}
	fe.Reason += fmt.Sprintf("; the table's schema here is the one exported to %s: if the table has changed since (columns added with --evolve), export the profile again (timelake tables profile)", r.ExportedFrom)
	return err
}

// options are base with the settings the poller reads key with. Errors:
// two profiles match the key, or the exported profile does not.
func (r *Rules) options(key string, base ValidateOptions) (ValidateOptions, error) {
	fs := profile.FileSettings{CSV: base.CSV, Columns: base.Columns, TimeUnit: base.TimeUnit, AssumeLocation: base.AssumeLocation,
		Evolve: base.Evolve, OnError: base.OnError, MaxBadRows: base.MaxBadRows}
	fs = profile.TableDefaults(fs, r.Properties, func(string, error) {})
	p := r.Exported
	if p != nil && !p.Matches(key) {
		return base, &decode.FileError{Key: key, Reason: fmt.Sprintf("the key is not one source profile %s applies to (%s): the poller would read it with other settings; upload it under a key the profile matches, or use that key's profile",
			p.Name, p.Values[profile.SettingMatch])}
	}
	if p == nil {
		var err error
		if p, err = r.Profiles.For(key); err != nil {
			return base, &decode.FileError{Key: key, Reason: err.Error()}
		}
	}
	fs = p.Apply(fs)
	opts := ValidateOptions{SampleRows: base.SampleRows, CSV: fs.CSV, Columns: fs.Columns, TimeUnit: fs.TimeUnit,
		AssumeLocation: fs.AssumeLocation, Evolve: fs.Evolve, OnError: fs.OnError, MaxBadRows: fs.MaxBadRows,
		Target: r.Target, TimeColumn: r.TimeColumn, Format: fs.Format}
	if fs.TimeColumn != "" && fs.TimeColumn != r.TimeColumn {
		opts.Renames = map[string]string{fs.TimeColumn: r.TimeColumn}
	}
	return opts, nil
}

// Validate checks a landing file before it is uploaded, without any network
// access, so that a gateway learns about a broken file at the edge. It is
// decode.Check: the decoder ingest uses, with the options ingest uses to
// create a table from the file, on every record of a CSV/TSV file for its
// structure and on a sample of its rows for the values (see decode.Check
// for what is and is not checked). The same file gives the same reason
// here and in ingest's quarantine report.
//
// Every error is a *decode.FileError whose Key is path. Under
// OnErrorSkipRows the result names the rows ingest would set aside.
func Validate(ctx context.Context, path string, opts ValidateOptions) (decode.CheckResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return decode.CheckResult{}, &decode.FileError{Key: path, Reason: "cannot read file", Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return decode.CheckResult{}, &decode.FileError{Key: path, Reason: "cannot read file", Err: err}
	}
	return validate(ctx, path, f, fi.Size(), opts)
}

// validate is Validate on the size bytes of f: the file at path, or a copy
// of it in memory (path names the file in errors and gives its type).
func validate(ctx context.Context, path string, f io.ReaderAt, size int64, opts ValidateOptions) (decode.CheckResult, error) {
	return decode.Check(ctx, decode.Source{Key: path, R: f, Size: size},
		decode.DecodeOptions{TimeColumn: opts.TimeColumn, TimeUnit: opts.TimeUnit, AssumeLocation: opts.AssumeLocation,
			CSV: opts.CSV, Columns: opts.Columns, Target: opts.Target, Evolve: opts.Evolve, OnError: opts.OnError,
			MaxBadRows: opts.MaxBadRows, Renames: opts.Renames, Format: opts.Format},
		decode.CheckOptions{SampleRows: opts.SampleRows})
}
