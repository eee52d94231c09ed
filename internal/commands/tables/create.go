package tables

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agnivade/levenshtein"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// CreateOptions are the inputs of `tables create`.
type CreateOptions struct {
	Output
	Lake           *lake.Lake
	Table          lake.TableName
	FromFile       string // local CSV, TSV, JSON (optionally gzipped) or Parquet file
	TimeColumn     string // "" means infer
	SeriesKey      []string
	Partition      lake.Granularity
	TimeUnit       string         // "", s, ms, us or ns
	AssumeLocation *time.Location // zone of text times without offset
	CSV            decode.CSV     // how FromFile's CSV text is written
	// Columns are explicit column types by name (--column); each must be
	// a column of FromFile.
	Columns map[string]arrow.DataType
	// Evolve, when set, is stored as the table property timelake.evolve.
	Evolve decode.Evolution
}

// NewCmdCreate builds `tables create`. runF replaces RunCreate in tests; nil
// means RunCreate.
func NewCmdCreate(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create [NAME] --from-file FILE",
		Short: "Create a table from a sample CSV, TSV or Parquet file, with the rules ingest uses",
		Long: `Create an empty table explicitly, from the schema of a local sample file, with
the same rules ingest applies when it creates a table from the first landing
file: the time column (given or inferred) becomes a required timestamptz, the
other columns are nullable with the type --column gives them or the type
inferred from all their values, the partition is <chunk>(time) and the sort
order is (series key..., time). No rows are loaded. With --evolve, the table
keeps that rule for the schema changes landing files may bring (the table
property timelake.evolve, docs/schema.md).

The settings that ingest reads from the environment are read here too
(TIMELAKE_TIME_COLUMN, TIMELAKE_SERIES_KEY, TIMELAKE_PARTITION,
TIMELAKE_CSV_DELIMITER, TIMELAKE_COLUMNS, ...).`,
		Example: `  timelake tables create iot.readings --from-file sample.csv --series-key device_id
  timelake tables create iot.readings --from-file sample.csv --column temperature:double --column battery:double
  timelake tables create iot.readings --from-file export.csv --csv-delimiter ';' --csv-decimal-comma --evolve add-columns
  timelake tables create iot.readings --from-file sample.parquet --partition hour --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := resolveCreate(cmd, f, args)
			if err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunCreate)
		},
	}
	settings.Bind(cmd.Flags(), settings.TablesCreate)
	return cmd
}

func resolveCreate(cmd *cobra.Command, f *cmdutil.Factory, args []string) (*CreateOptions, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return nil, err
	}
	opts := &CreateOptions{
		Output:         output(f),
		FromFile:       settings.FromFile.Get(r),
		TimeColumn:     settings.TimeColumn.Get(r),
		SeriesKey:      settings.SeriesKey.Get(r),
		Partition:      lake.Granularity(settings.Partition.Get(r)),
		TimeUnit:       settings.TimeUnit.Get(r),
		AssumeLocation: settings.AssumeTimezone.Get(r),
		CSV:            settings.CSVOf(r),
		Columns:        settings.Columns.Get(r),
		Evolve:         settings.Evolve.Get(r),
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(opts.FromFile) == "" {
		return nil, cmdutil.UsageErrorf("--from-file is required")
	}
	if err := decode.CheckTimeColumnType(opts.TimeColumn, opts.Columns); err != nil {
		return nil, &cmdutil.UsageError{Err: err}
	}
	if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args); err != nil {
		return nil, err
	}
	return opts, nil
}

// RunCreate decodes FromFile with decode.DecodeEach (Target nil: schema
// and time column inferred as for ingest's auto-create, Columns typed as
// given; every row checked, in pieces of ingest's default memory budget,
// keeping none), creates the table with lake.CreateTable and prints what
// was created. Errors: the file cannot be read or decoded (*decode.FileError),
// a series key or --column column is missing, or lake.ErrTableExists.
func RunCreate(ctx context.Context, opts *CreateOptions) error {
	fh, err := os.Open(opts.FromFile)
	if err != nil {
		return fmt.Errorf("create %s: %w", opts.Table, err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("create %s: %w", opts.Table, err)
	}
	key := filepath.Base(opts.FromFile)
	var dec decode.Decoded // the schema, without rows
	err = decode.DecodeEach(ctx, decode.Source{Key: key, R: fh, Size: st.Size()}, decode.DecodeOptions{
		TimeColumn: opts.TimeColumn, TimeUnit: opts.TimeUnit, AssumeLocation: opts.AssumeLocation,
		CSV: opts.CSV, Columns: opts.Columns, PieceBytes: ingest.DefaultMemoryBudget,
		// Too many columns for a table are refused on the header.
		CheckColumns: func(sc *arrow.Schema) error { return lake.CheckCreateColumns(sc.NumFields(), 0) },
	}, func(piece *decode.Decoded) error {
		dec.Schema, dec.TimeColumn = piece.Schema, piece.TimeColumn
		piece.Release()
		return nil
	})
	if decode.IsColumnsSetting(err) {
		return &cmdutil.UsageError{Err: fmt.Errorf("create %s from %s: %w", opts.Table, opts.FromFile, err)}
	}
	if err == nil {
		// The schema every manifest's header would carry.
		err = lake.CheckCreateWidth(dec.Schema, 0)
	}
	if err != nil {
		return fmt.Errorf("create %s from %s: %w", opts.Table, opts.FromFile, err)
	}
	for _, k := range opts.SeriesKey {
		if len(dec.Schema.FieldIndices(k)) == 0 {
			return &cmdutil.UsageError{Err: fmt.Errorf("create %s: --series-key %s: %s has no column %q%s (its columns: %s)",
				opts.Table, k, opts.FromFile, k, didYouMean(k, dec.Schema), columnNames(dec.Schema))}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(opts.Columns)) {
		if len(dec.Schema.FieldIndices(k)) == 0 {
			return &cmdutil.UsageError{Err: fmt.Errorf("create %s: --column %s:%s: %s has no column %q%s (its columns: %s)",
				opts.Table, k, decode.TypeName(opts.Columns[k]), opts.FromFile, k, didYouMean(k, dec.Schema), columnNames(dec.Schema))}
		}
	}
	spec := lake.CreateSpec{TimeColumn: dec.TimeColumn, SeriesKey: opts.SeriesKey, Partition: opts.Partition}
	if opts.Evolve != "" {
		spec.Properties = map[string]string{lake.PropEvolve: string(opts.Evolve)}
	}
	t, err := opts.Lake.CreateTable(ctx, opts.Table, dec.Schema, spec)
	if err != nil {
		return err
	}
	return RenderCreated(opts.Output, BuildCreated(opts.Table, t.Metadata(), opts.FromFile))
}

// didYouMean names the column of sc closest to name ("; did you mean
// \"temperature\"?"): equal but for case, or at most two edits
// (Levenshtein distance) away, one for a name of up to five characters;
// "" when none is.
func didYouMean(name string, sc *arrow.Schema) string {
	// Two edits for a long name, one for a short one ("site" is not a
	// typo of "time").
	best, bestDist := "", min(3, len(name)/3+1)
	for _, f := range sc.Fields() {
		d := levenshtein.ComputeDistance(strings.ToLower(name), strings.ToLower(f.Name))
		if d < bestDist {
			best, bestDist = f.Name, d
		}
	}
	if best == "" {
		return ""
	}
	return iostreams.Sprintf("; did you mean %q?", best)
}

// maxListedColumns is how many columns columnNames lists.
const maxListedColumns = 50

// columnNames lists the columns of sc for messages: the first
// maxListedColumns, and how many more there are.
func columnNames(sc *arrow.Schema) string {
	n := min(sc.NumFields(), maxListedColumns)
	names := make([]string, n)
	for i := range n {
		names[i] = sc.Field(i).Name
	}
	list := strings.Join(names, ", ")
	if more := sc.NumFields() - n; more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return list
}

// BuildCreated describes a new table the way ingest reports the tables it
// creates (ingest.CreatedFrom).
func BuildCreated(name lake.TableName, meta table.Metadata, fromFile string) *ingest.Created {
	return ingest.CreatedFrom(name, meta, fromFile)
}

// RenderCreated prints c: ingest's "created table" text, or c as JSON.
func RenderCreated(o Output, c *ingest.Created) error {
	if o.JSON {
		return o.IO.PrintJSON(c)
	}
	_, err := io.WriteString(o.IO.Out, lakecmd.CreatedText(c))
	return err
}
