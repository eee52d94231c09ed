package envcheck

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	ingestcmd "github.com/timelake/timelake/internal/commands/ingest"
	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/iostreams"
)

// ShownSetting is one row of `env show` and its --json form.
type ShownSetting struct {
	Name     string `json:"name"`               // flag name, or the variable for credentials
	Value    string `json:"value"`              // as resolved; secrets masked
	Source   string `json:"source"`             // flag, environment, env file, default, or "" if unset
	Variable string `json:"variable,omitempty"` // the variable it came from, if any
}

// ShowOptions are the inputs of `env show`.
type ShowOptions struct {
	IO       *iostreams.IOStreams
	JSON     bool
	Settings []ShownSetting
}

// envKeysFromUsage returns the variables that a flag's help names with
// cmdutil.EnvHelp (" (env A, B)" at its end), or nil.
func envKeysFromUsage(usage string) []string {
	i := strings.LastIndex(usage, " (env ")
	if i < 0 || !strings.HasSuffix(usage, ")") {
		return nil
	}
	return strings.Split(usage[i+len(" (env "):len(usage)-1], ", ")
}

// NewCmdShow builds `env show`. runF replaces RunShow in tests; nil means
// RunShow.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print the resolved settings, masked, and where each came from",
		Long: `Print every setting ingest would use, with its value and where it came from:
a flag, the environment, the env file, or the default. Secrets are masked
(first 4 characters). Nothing is contacted.`,
		Example: `  timelake env show --env-file timelake.env
  timelake env show --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rows, err := showSettings(cmd, f)
			if err != nil {
				return err
			}
			opts := &ShowOptions{IO: f.IO, JSON: f.JSON, Settings: rows}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunShow(cmd.Context(), opts)
		},
	}
	return cmd
}

func shown(s config.Setting) ShownSetting {
	r := ShownSetting{Name: s.Name, Value: s.Value, Source: string(s.Source), Variable: s.Key}
	if s.Source == config.FromDefault && s.Value == "" {
		r.Source = ""
	}
	return r
}

// showSettings resolves every setting with its origin.
func showSettings(cmd *cobra.Command, f *cmdutil.Factory) ([]ShownSetting, error) {
	s, err := resolveSettings(cmd, f)
	if err != nil {
		return nil, err
	}
	if s.EnvFile.Err != nil {
		return nil, s.EnvFile.Err
	}
	ef := ShownSetting{Name: "env-file", Value: s.EnvFile.Path}
	switch {
	case s.EnvFile.Path == "":
	case s.EnvFile.Source == "--env-file":
		ef.Source = string(config.FromFlag)
	default:
		ef.Source, ef.Variable = string(config.FromEnv), EnvFileEnv
	}
	rows := []ShownSetting{ef, shown(s.Landing), shown(s.Warehouse), shown(s.Table), shown(s.Endpoint), shown(s.Region)}
	vh, err := f.Resolve(cmd, "s3-virtual-hosted", cmdutil.VirtualHostedEnv...)
	if err != nil {
		return nil, err
	}
	rows = append(rows, shown(vh))

	env, err := f.Env()
	if err != nil {
		return nil, err
	}
	for _, k := range []string{AccessKeyEnv, SecretKeyEnv, SessionTokenEnv, ProfileEnv} {
		v, key, src := env.Lookup(k)
		r := ShownSetting{Name: k, Value: v, Source: string(src), Variable: key}
		if k != ProfileEnv {
			r.Value = config.Mask(v)
		}
		rows = append(rows, r)
	}
	c := s.Credentials
	rows = append(rows, ShownSetting{Name: "credentials", Value: c.Kind, Source: "derived"})

	// The other ingest settings, read from the ingest command itself (flag,
	// variables from its help, default) so that this list cannot drift.
	ingest := ingestcmd.NewCmdIngest(f, nil)
	var ferr error
	ingest.Flags().VisitAll(func(fl *pflag.Flag) {
		keys := envKeysFromUsage(fl.Usage)
		if ferr != nil || keys == nil || fl.Name == "landing" || fl.Name == "warehouse" || fl.Name == "table" {
			return
		}
		v, err := f.Resolve(ingest, fl.Name, keys...)
		if err != nil {
			ferr = err
			return
		}
		rows = append(rows, shown(v))
	})
	if ferr != nil {
		return nil, ferr
	}
	ll := ShownSetting{Name: "log-level", Value: f.LogLevel, Source: string(config.FromDefault)}
	if fl := cmd.Flags().Lookup("log-level"); fl != nil && fl.Changed {
		ll.Source = string(config.FromFlag)
	} else if v, ok := f.Getenv("TIMELAKE_LOG_LEVEL"); ok && v != "" {
		ll.Source, ll.Variable = string(config.FromEnv), "TIMELAKE_LOG_LEVEL"
	}
	rows = append(rows, ll)
	return rows, nil
}

// RunShow prints the settings: setting, value, source (a table on a
// terminal, tab-separated lines in a pipe, or --json).
func RunShow(_ context.Context, opts *ShowOptions) error {
	if opts.JSON {
		return writeJSON(opts.IO.Out, opts.Settings)
	}
	rows := make([][]string, len(opts.Settings))
	for i, s := range opts.Settings {
		src := s.Source
		switch {
		case src == "":
			src = "not set"
		case s.Variable != "":
			src = s.Variable + " (" + s.Source + ")"
		case src == string(config.FromFlag):
			src = "--" + s.Name
		}
		val := s.Value
		if val == "" {
			val = "-"
		}
		rows[i] = []string{s.Name, val, strings.TrimSpace(src)}
	}
	return writeRows(opts.IO, []string{"setting", "value", "source"}, rows)
}
