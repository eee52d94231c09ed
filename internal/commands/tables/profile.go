package tables

import (
	"context"
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/profile"
)

// ProfileOptions are the inputs of `tables profile`.
type ProfileOptions struct {
	Output
	Lake    *lake.Lake
	Table   lake.TableName
	Profile string
	Now     func() time.Time // nil: time.Now
}

// NewCmdProfile builds `tables profile`. runF replaces RunProfile in
// tests; nil means RunProfile.
func NewCmdProfile(f *cmdutil.Factory, runF func(context.Context, *ProfileOptions) error) *cobra.Command {
	return &cobra.Command{
		Use:   "profile [NAME] PROFILE",
		Short: "Export a source profile, with the table's schema, as a file for gateways (upload --profile-file)",
		Long: `Print one source profile of the table (timelake.profile.<PROFILE>.*, see
docs/schema.md) as a JSON document for gateways: its settings, the table's
load settings it does not set (timelake.evolve, timelake.on-error,
timelake.max-bad-rows), and the table's current schema and time column. A
gateway given the file (timelake upload --profile-file) validates each file
as the poller will read it, without access to the warehouse. Export it again
after the profile or the schema changes.

The tables show command lists the profiles.`,
		Example: `  timelake tables profile iot.readings berlin > berlin-profile.json
  timelake tables profile berlin --env-file timelake.env > berlin-profile.json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := &ProfileOptions{Output: output(f), Profile: args[len(args)-1]}
			var err error
			if opts.Table, opts.Lake, err = tableAndLake(cmd, f, args[:len(args)-1]); err != nil {
				return err
			}
			return run(cmd.Context(), opts, runF, RunProfile)
		},
	}
}

// RunProfile loads the table and prints the export of the profile. A name
// that is not one of its profiles is a usage error.
func RunProfile(ctx context.Context, opts *ProfileOptions) error {
	t, err := opts.Lake.LoadTable(ctx, opts.Table)
	if err != nil {
		return err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	meta := t.Metadata()
	schema, err := json.Marshal(meta.CurrentSchema())
	if err != nil {
		return err
	}
	exp, err := profile.NewExport(opts.Table.String(), meta.Properties(), schema, t.Contract().TimeColumn, opts.Profile, now())
	if err != nil {
		return cmdutil.UsageErrorf("%v", err)
	}
	return opts.IO.PrintJSON(exp)
}
