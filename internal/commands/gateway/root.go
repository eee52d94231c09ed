// Package gateway assembles the command tree of timelake-gateway, the
// binary for field gateways: upload (with --spool and --validate), env
// check of the landing side and env show. It links neither the lake nor
// iceberg-go (a test checks it), so it stays small enough for a gateway's
// flash and memory.
package gateway

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/build"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	envcheckcmd "github.com/timelake/timelake/internal/commands/envcheck"
	uploadcmd "github.com/timelake/timelake/internal/commands/upload"
	"github.com/timelake/timelake/internal/iostreams"

	// Parquet files are read with decode/pqlite, which links neither
	// arrow-go's parquet/file (and arrow/compute) nor pqarrow, which the
	// full binary registers.
	_ "github.com/timelake/timelake/internal/decode/pqlite"
)

// NewRootCmd builds the gateway's command tree around f.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command { return NewRootCmdStubbed(f, nil) }

// NewRootCmdStubbed builds the gateway's command tree with every run
// function replaced by stub (nil: the real ones), as the tests of the
// docs' command lines run them: flags parsed, settings resolved, nothing
// done.
func NewRootCmdStubbed(f *cmdutil.Factory, stub func(context.Context, any) error) *cobra.Command {
	root := &cobra.Command{
		Use:   "timelake-gateway",
		Short: "Put files from a field gateway into the landing bucket timelake loads",
		Long: `timelake-gateway is the gateway side of timelake: "timelake-gateway upload"
puts CSV, TSV, JSON and Parquet files into the landing bucket under unique,
retry-stable keys (or, with --spool, every file of a folder), and
"timelake-gateway env check" proves the landing settings work. Its commands
and settings are those of "timelake upload" and "timelake env"; see
docs/gateways.md.`,
		Version: build.String(),
	}
	cmdutil.PrepareRoot(root, f)
	var uploadRun func(context.Context, *uploadcmd.Options) error
	var env *envcheckcmd.RunFuncs
	if stub != nil {
		uploadRun = cmdutil.Adapt[uploadcmd.Options](stub)
		env = &envcheckcmd.RunFuncs{Check: cmdutil.Adapt[envcheckcmd.CheckOptions](stub), Show: cmdutil.Adapt[envcheckcmd.ShowOptions](stub)}
	}
	root.AddCommand(uploadcmd.NewCmdUpload(f, uploadRun, nil))
	root.AddCommand(envcheckcmd.NewCmdEnv(f, env, nil))
	cmdutil.FinishRoot(root)
	return root
}

// Main runs timelake-gateway with args (without the program name) and
// returns the exit code (cmdutil.Main).
func Main(args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool)) cmdutil.ExitCode {
	return cmdutil.Main(args, ios, getenv, NewRootCmd)
}

// Execute is Main with a caller-supplied context (tests).
func Execute(ctx context.Context, args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool)) cmdutil.ExitCode {
	return cmdutil.Execute(ctx, &cmdutil.Factory{IO: ios, Getenv: getenv}, args, NewRootCmd)
}
