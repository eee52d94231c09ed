// Package commands assembles the timelake command tree and maps the final
// error of a run to a documented exit code (docs/exit-codes.md).
package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/build"
	"github.com/timelake/timelake/internal/commands/cmdutil"
	envcheckcmd "github.com/timelake/timelake/internal/commands/envcheck"
	ingestcmd "github.com/timelake/timelake/internal/commands/ingest"
	tablescmd "github.com/timelake/timelake/internal/commands/tables"
	uploadcmd "github.com/timelake/timelake/internal/commands/upload"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/landing"
)

// NewRootCmd builds the command tree around f.
func NewRootCmd(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "timelake",
		Short: "Load files from field gateways into Apache Iceberg tables on S3-compatible storage",
		Long: `timelake turns CSV and Parquet files that field gateways drop into a landing
bucket into Apache Iceberg tables on S3-compatible storage (Tigris, AWS S3,
MinIO) or a local folder. Run "timelake ingest" from cron every minute.`,
		Version:       build.String(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	pf := root.PersistentFlags()
	pf.StringVar(&f.EnvFile, "env-file", "", "read settings from this KEY=value file (e.g. timelake.env); the environment wins over it"+cmdutil.EnvHelp("TIMELAKE_ENV_FILE"))
	pf.BoolVar(&f.JSON, "json", false, "print one JSON document on stdout (logs stay on stderr)")
	pf.StringVar(&f.LogLevel, "log-level", "warn", "stderr log level: debug, info, warn or error"+cmdutil.EnvHelp("TIMELAKE_LOG_LEVEL"))
	pf.String("endpoint", "", "S3 endpoint URL, e.g. https://t3.storage.dev"+cmdutil.EnvHelp(cmdutil.EndpointEnv...))
	pf.String("region", "", "S3 region; Tigris uses auto"+cmdutil.EnvHelp(cmdutil.RegionEnv...))
	pf.String("s3-virtual-hosted", "", "use virtual-hosted-style S3 addressing (default: path-style for custom endpoints)"+cmdutil.EnvHelp(cmdutil.VirtualHostedEnv...))
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("log-level") {
			if v, ok := f.Getenv("TIMELAKE_LOG_LEVEL"); ok && v != "" {
				f.LogLevel = v
			}
		}
		switch f.LogLevel {
		case "debug", "info", "warn", "error":
			return nil
		}
		return cmdutil.FlagErrorf("--log-level: %q is not one of debug, info, warn, error", f.LogLevel)
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &cmdutil.FlagError{Err: err} })
	root.AddCommand(ingestcmd.NewCmdIngest(f, nil))
	root.AddCommand(uploadcmd.NewCmdUpload(f, nil))
	root.AddCommand(envcheckcmd.NewCmdEnv(f, nil))
	root.AddCommand(tablescmd.NewCmdTables(f, nil))
	return root
}

// Main runs timelake with args (without the program name) and returns the
// exit code. SIGINT and SIGTERM cancel the run.
func Main(args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool)) cmdutil.ExitCode {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Execute(ctx, args, ios, getenv)
}

// Execute is Main with a caller-supplied context (tests).
func Execute(ctx context.Context, args []string, ios *iostreams.IOStreams, getenv func(string) (string, bool)) cmdutil.ExitCode {
	f := &cmdutil.Factory{IO: ios, Getenv: getenv}
	root := NewRootCmd(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	code := exitCode(ctx, err)
	var silent *cmdutil.SilentError
	switch {
	case errors.As(err, &silent), errors.Is(err, cmdutil.ErrPartial):
		// Already reported on stdout.
	default:
		fmt.Fprintln(ios.ErrOut, "Error:", err)
		var fe *cmdutil.FlagError
		if errors.As(err, &fe) && cmd != nil {
			fmt.Fprintf(ios.ErrOut, "Try: %s --help\n", cmd.CommandPath())
		}
	}
	if f.JSON {
		b, _ := json.Marshal(map[string]any{"message_type": "exit_error", "code": int(code), "message": err.Error()})
		fmt.Fprintln(ios.ErrOut, string(b))
	}
	return code
}

func exitCode(ctx context.Context, err error) cmdutil.ExitCode {
	var fe *cmdutil.FlagError
	var silent *cmdutil.SilentError
	switch {
	case errors.As(err, &silent):
		return silent.Code
	case errors.As(err, &fe):
		return cmdutil.ExitUsage
	case errors.Is(err, cmdutil.ErrPartial):
		return cmdutil.ExitPartial
	case errors.Is(err, landing.ErrLeaseHeld):
		return cmdutil.ExitLeaseHeld
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return cmdutil.ExitCancelled
	}
	if isCobraUsage(err) {
		return cmdutil.ExitUsage
	}
	return cmdutil.ExitFailed
}

// isCobraUsage recognises cobra's own argument errors (unknown command,
// wrong number of arguments), which are not FlagErrors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
