package envcheck

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/settings"
)

// ShownSetting is one row of `env show` and its --json form.
type ShownSetting struct {
	Name     string   `json:"name"`               // flag name, or the variable of a setting without flag
	Value    string   `json:"value"`              // as given; secrets masked
	Source   string   `json:"source"`             // flag, environment, env file, default, derived, or "" if unset
	Variable string   `json:"variable,omitempty"` // the variable it came from, if any
	Commands []string `json:"commands"`           // commands that use it: "all", "ingest", "tables create", ...
}

// ShowOptions are the inputs of `env show`.
type ShowOptions struct {
	IO       *iostreams.IOStreams
	JSON     bool
	Settings []ShownSetting
}

// NewCmdShow builds `env show`. runF replaces RunShow in tests; nil means
// RunShow.
func NewCmdShow(f *cmdutil.Factory, runF func(context.Context, *ShowOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "show",
		Short: "Print every setting of every command, masked, and where each came from",
		Long: `Print every setting of every command that can come from a variable, with
its value and where it came from: a flag, the environment, the env file, or
the default, and the commands that use it. Secrets are never printed: a row
says only that the secret is set and its length. Nothing is contacted.`,
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

// shown renders one resolved setting, its value masked as its sensitivity
// requires.
func shown(s *settings.Spec, v config.Setting) ShownSetting {
	return ShownSetting{Name: s.Name(), Value: s.Display(v.Value), Source: string(v.Source), Variable: v.Key,
		Commands: s.CommandNames()}
}

// showSettings resolves every setting of the registry that has a variable
// (the others are per-run flags), with its origin, plus the kind of
// credentials they add up to.
func showSettings(cmd *cobra.Command, f *cmdutil.Factory) ([]ShownSetting, error) {
	env, err := f.Env()
	if err != nil {
		return nil, err
	}
	r := settings.NewResolver(cmd.Flags(), env)
	rows := []ShownSetting{shown(&settings.EnvFile.Spec, f.EnvFile)}
	for _, s := range settings.All() {
		if len(s.Env) == 0 || s == &settings.EnvFile.Spec {
			continue
		}
		rows = append(rows, shown(s, r.Lookup(s)))
		if s == &settings.Profile.Spec {
			rows = append(rows, ShownSetting{Name: "credentials", Value: credentialsFrom(env).Kind, Source: "derived",
				Commands: s.CommandNames()})
		}
	}
	return rows, nil
}

// RunShow prints the settings: setting, value, source, commands (a table
// on a terminal, tab-separated lines under a header in a pipe, or --json).
func RunShow(_ context.Context, opts *ShowOptions) error {
	if opts.JSON {
		return opts.IO.PrintJSON(opts.Settings)
	}
	t := opts.IO.NewTable(iostreams.Column{Header: "setting"}, iostreams.Column{Header: "value", Wrap: 60},
		iostreams.Column{Header: "source"}, iostreams.Column{Header: "commands", Wrap: 40})
	for _, s := range opts.Settings {
		src := config.Setting{Name: s.Name, Source: config.Source(s.Source), Key: s.Variable}.Describe()
		val := s.Value
		if val == "" {
			val = "-"
		}
		t.AddRow(s.Name, val, src, strings.Join(s.Commands, ", "))
	}
	return t.Render()
}
