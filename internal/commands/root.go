// Package commands assembles the timelake command tree and maps the final
// error of a run to a documented exit code (docs/exit-codes.md): usage
// errors are recognised by type (cmdutil.IsUsage), never by their text.
package commands

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/build"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	envcheckcmd "github.com/timelake/timelake/internal/commands/envcheck"
	"github.com/timelake/timelake/internal/commands/envcheck/lakecheck"
	ingestcmd "github.com/timelake/timelake/internal/commands/ingest"
	"github.com/timelake/timelake/internal/commands/lakecmd"
	landingcmd "github.com/timelake/timelake/internal/commands/landing"
	servecmd "github.com/timelake/timelake/internal/commands/serve"
	tablescmd "github.com/timelake/timelake/internal/commands/tables"
	uploadcmd "github.com/timelake/timelake/internal/commands/upload"
	"github.com/timelake/timelake/internal/iostreams"
)

// NewRootCmd builds the command tree around f.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command { return newRootCmd(f, nil) }

// newRootCmd builds the command tree; stub, when not nil, replaces the run
// function of every command and receives its resolved *Options (tests of
// command lines: every flag parsed, every setting resolved, nothing run).
func newRootCmd(f *cmdutil.Factory, stub func(context.Context, any) error) *cobra.Command {
	root := &cobra.Command{
		Use:   "timelake",
		Short: "Load files from field gateways into Apache Iceberg tables on S3-compatible storage",
		Long: `timelake turns CSV, JSON and Parquet files that field gateways drop into a landing
bucket into Apache Iceberg tables on S3-compatible storage (Tigris, AWS S3,
MinIO) or a local folder. Run "timelake ingest" from cron every minute, or
"timelake serve" to load files seconds after they land.`,
		Version:       build.String(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmdutil.PrepareRoot(root, f)
	var env *envcheckcmd.RunFuncs
	if stub != nil {
		env = &envcheckcmd.RunFuncs{Check: cmdutil.Adapt[envcheckcmd.CheckOptions](stub), Show: cmdutil.Adapt[envcheckcmd.ShowOptions](stub)}
	}
	root.AddCommand(ingestcmd.NewCmdIngest(f, cmdutil.Adapt[ingestcmd.Options](stub)))
	root.AddCommand(servecmd.NewCmdServe(f, cmdutil.Adapt[servecmd.Options](stub)))
	root.AddCommand(uploadcmd.NewCmdUpload(f, cmdutil.Adapt[uploadcmd.Options](stub), lakecmd.UploadRules))
	root.AddCommand(envcheckcmd.NewCmdEnv(f, env, lakecheck.New))
	root.AddCommand(tablescmd.NewCmdTables(f, stub))
	root.AddCommand(landingcmd.NewCmdLanding(f, stub))
	cmdutil.FinishRoot(root)
	return root
}

// Main runs timelake with args (without the program name) and returns the
// exit code (cmdutil.Main).
func Main(args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool)) cmdutil.ExitCode {
	return cmdutil.Main(args, ios, getenv, NewRootCmd)
}

// Execute is Main with a caller-supplied context (tests); no variable of
// the process environment is reported unknown (getenv cannot list them).
func Execute(ctx context.Context, args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool)) cmdutil.ExitCode {
	return cmdutil.Execute(ctx, &cmdutil.Factory{IO: ios, Getenv: getenv}, args, NewRootCmd)
}

// ExecuteEnviron is Execute with the process environment given as a list
// of KEY=value (as os.Environ), whose unknown TIMELAKE_* variables are
// reported.
func ExecuteEnviron(ctx context.Context, args []string, ios *iostreams.IOStreams, environ []string) cmdutil.ExitCode {
	return cmdutil.ExecuteEnviron(ctx, args, ios, environ, NewRootCmd)
}
