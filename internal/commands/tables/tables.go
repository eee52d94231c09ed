// Package tables is the `timelake tables` command group: what landed, when,
// and from which file, without a query engine (docs/tables.md).
//
// Each subcommand has an Options struct, a NewCmdX(f, runF) constructor
// and a plain RunX(ctx, opts) function. Rows are built by pure functions
// from Iceberg table metadata (table.Metadata) and rendered separately
// through internal/iostreams: an aligned table on a terminal, tab-separated
// values under a header line in a pipe, one JSON document with --json.
package tables

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// NewCmdTables builds the `tables` group. runF, when not nil, replaces the
// run function of every subcommand and receives its *XOptions (tests of flag
// parsing); nil means the real run functions.
func NewCmdTables(f *cmdutil.Factory, runF func(context.Context, any) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tables",
		Short: "Show the warehouse's tables: what landed, when, and from which file",
		Long: `Inspect the Iceberg tables of the warehouse without a query engine: list
them, show one's schema and contract, its snapshots, the batch ids (landing
keys) it loaded, what happened to every landing file (history) and its data
files; create one from a sample file, run its
maintenance now, change its settings (properties), expire snapshots by
hand, or delete the rows a predicate matches and undo such a delete.

NAME is namespace.table (a bare name is in namespace "default"); when it is
left out, TIMELAKE_TABLE is used. Output is an aligned table on a terminal,
tab-separated values with a header line in a pipe, and one JSON document with
--json (see docs/tables.md).`,
		Example: `  timelake tables list --warehouse ./lake
  timelake tables batch iot.readings gateway-7/20260105T1000.csv
  timelake tables snapshots --since 24h --env-file timelake.env
  timelake tables maintain iot.readings --dry-run`,
		Args: cobra.NoArgs,
	}
	settings.Bind(cmd.PersistentFlags(), settings.Tables)
	cmd.AddCommand(
		NewCmdList(f, cmdutil.Adapt[ListOptions](runF)),
		NewCmdShow(f, cmdutil.Adapt[ShowOptions](runF)),
		NewCmdSnapshots(f, cmdutil.Adapt[SnapshotsOptions](runF)),
		NewCmdBatches(f, cmdutil.Adapt[BatchesOptions](runF)),
		NewCmdBatch(f, cmdutil.Adapt[BatchOptions](runF)),
		NewCmdHistory(f, cmdutil.Adapt[HistoryOptions](runF)),
		NewCmdFiles(f, cmdutil.Adapt[FilesOptions](runF)),
		NewCmdCreate(f, cmdutil.Adapt[CreateOptions](runF)),
		NewCmdMaintain(f, cmdutil.Adapt[MaintainOptions](runF)),
		NewCmdAlter(f, cmdutil.Adapt[AlterOptions](runF)),
		NewCmdProfile(f, cmdutil.Adapt[ProfileOptions](runF)),
		NewCmdExpire(f, cmdutil.Adapt[ExpireOptions](runF)),
		NewCmdDelete(f, cmdutil.Adapt[DeleteOptions](runF)),
		NewCmdRollback(f, cmdutil.Adapt[RollbackOptions](runF)),
	)
	cmdutil.ExplainErrors(cmd, f.ExplainLake)
	return cmd
}

// Output is where and how a subcommand prints (internal/iostreams): a
// table aligned on a terminal and tab-separated with a header line in a
// pipe, or one JSON document with --json.
type Output struct {
	IO   *iostreams.IOStreams
	JSON bool // --json
}

// tty reports whether stdout is a terminal.
func (o Output) tty() bool { return o.IO.IsStdoutTTY() }

// output returns the Output of f's streams.
func output(f *cmdutil.Factory) Output { return Output{IO: f.IO, JSON: f.JSON} }

// openLake resolves --warehouse / TIMELAKE_WAREHOUSE and opens it (no I/O
// for a local folder; an S3 client for s3://).
func openLake(cmd *cobra.Command, f *cmdutil.Factory) (*lake.Lake, error) {
	r, err := f.Settings(cmd)
	if err != nil {
		return nil, err
	}
	uri := settings.Warehouse.Require(r)
	if err := r.Err(); err != nil {
		return nil, err
	}
	return lakecmd.OpenLake(cmd.Context(), f, cmd, uri)
}

// tableName parses the NAME argument, or TIMELAKE_TABLE when arg is empty.
func tableName(cmd *cobra.Command, f *cmdutil.Factory, arg string) (lake.TableName, error) {
	if strings.TrimSpace(arg) != "" {
		n, err := lake.ParseTableName(arg)
		if err != nil {
			return lake.TableName{}, cmdutil.UsageErrorf("NAME: %v", err)
		}
		return n, nil
	}
	r, err := f.Settings(cmd)
	if err != nil {
		return lake.TableName{}, err
	}
	n, from, err := settings.Table.Resolve(r)
	switch {
	case err != nil:
		return lake.TableName{}, err
	case from.Source == "":
		return lake.TableName{}, cmdutil.UsageErrorf("missing table: pass NAME or set %s", strings.Join(settings.Table.Env, " or "))
	}
	return n, nil
}

// tableAndLake resolves the table of the optional NAME argument (args[0],
// else TIMELAKE_TABLE) and opens the warehouse: what every command on one
// table starts with.
func tableAndLake(cmd *cobra.Command, f *cmdutil.Factory, args []string) (lake.TableName, *lake.Lake, error) {
	n, err := tableName(cmd, f, firstArg(args))
	if err != nil {
		return lake.TableName{}, nil, err
	}
	l, err := openLake(cmd, f)
	if err != nil {
		return lake.TableName{}, nil, err
	}
	return n, l, nil
}

// firstArg is args[0], or "" (the table then comes from TIMELAKE_TABLE).
func firstArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// run calls runF when set, else run.
func run[T any](ctx context.Context, opts *T, runF func(context.Context, *T) error, run func(context.Context, *T) error) error {
	if runF != nil {
		return runF(ctx, opts)
	}
	return run(ctx, opts)
}
