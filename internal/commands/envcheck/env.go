// Package envcheck is the `timelake env` command group: `env check` proves
// that the settings work (endpoint, clock, credentials, both buckets,
// conditional writes, the table) before cron runs `ingest` with them, and
// `env show` prints the resolved settings, masked, and where each came from.
package envcheck

import (
	"context"
	"errors"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/settings"
	"github.com/timelake/timelake/internal/storage"
)

// Credential variables of the standard AWS chain that timelake reads
// itself (internal/settings).
var (
	AccessKeyEnv    = settings.AccessKeyID.Name()
	SecretKeyEnv    = settings.SecretAccessKey.Name()
	SessionTokenEnv = settings.SessionToken.Name()
	ProfileEnv      = settings.Profile.Name()
)

// RunFuncs replace the run functions of the group's commands in tests of
// flag parsing; a nil field keeps the real one.
type RunFuncs struct {
	Check func(context.Context, *CheckOptions) error
	Show  func(context.Context, *ShowOptions) error
}

// NewCmdEnv builds the `env` group with its `check` and `show` commands;
// lake gives env check its checks of the lake (nil: the landing side
// only). runF may be nil.
func NewCmdEnv(f *cmdutil.Factory, runF *RunFuncs, lake LakeSide) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Check or show the settings that ingest will use",
		Long: `Check or show the settings that "timelake ingest" will use: flags, then the
environment, then --env-file. Run "timelake env check --env-file timelake.env"
on the poller host before you add the cron line.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{cmdutil.AnnotationShowsLocations: ""},
	}
	settings.Bind(cmd.PersistentFlags(), settings.Env)
	if runF == nil {
		runF = &RunFuncs{}
	}
	cmd.AddCommand(NewCmdCheck(f, runF.Check, lake), NewCmdShow(f, runF.Show))
	return cmd
}

// Settings are the resolved settings that env check and env show look at.
// Values are as given; Credentials holds secrets and must only be printed
// masked (settings.MaskSecret).
type Settings struct {
	EnvFile   EnvFile
	Landing   config.Setting
	Warehouse config.Setting
	Table     config.Setting
	// Routes is TIMELAKE_ROUTES as given; RouteRules its rules, or
	// RoutesErr why they do not read.
	Routes     config.Setting
	RouteRules route.Routes
	RoutesErr  error
	// Gateway and UploadPrefix are upload's --gateway and --prefix, which
	// place the gateway's keys (the gateway binary's env check probes
	// there).
	Gateway      config.Setting
	UploadPrefix config.Setting
	Endpoint     config.Setting
	Region       config.Setting
	Credentials  Credentials
	// S3 is the connection ingest would use; S3Err is why it could not be
	// built from the settings (e.g. an invalid TIMELAKE_S3_VIRTUAL_HOSTED).
	S3    storage.S3Config
	S3Err error
	// Checked counts the other settings of the registry with a variable
	// that were validated; Invalid holds a *settings.ValueError for each
	// bad one.
	Checked int
	Invalid []error
	// Unknown are the TIMELAKE_* variables of the environment and the env
	// file that no setting reads, and the AWS_* and LANDING_* ones that
	// misspell one a setting reads (settings.UnknownVariables).
	Unknown []settings.UnknownVariable
}

// EnvFile describes the env file of a run.
type EnvFile struct {
	Path   string // as given; "" when none
	Source string // "--env-file" or "TIMELAKE_ENV_FILE (environment)"
	// Err is why the file could not be read; every other setting is then
	// unknown.
	Err error
	// Exposed is set when the file holds a secret that other users can
	// read.
	Exposed *settings.Exposure
	// Writable is set when its group or other users can write the file
	// (a *settings.WritableEnvFile): every other command refuses it.
	Writable error
}

// Credentials says where the S3 credentials come from. Secret fields are
// never printed unmasked.
type Credentials struct {
	// Kind is "static keys", "profile" or "default chain".
	Kind string
	// From names the variables and their source, e.g.
	// "AWS_ACCESS_KEY_ID (env file)".
	From            string
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	Profile         string
	// Missing names a variable that must be set with the others, e.g. the
	// secret key when only the key id is set.
	Missing string
}

// Credential kinds.
const (
	CredStatic  = "static keys"
	CredProfile = "profile"
	CredChain   = "default chain"
)

// errEnvFile marks settings that are unknown because the env file failed.
var errEnvFile = errors.New("env file not readable")

// resolveSettings reads every setting through the factory, as ingest does,
// and validates every value of the registry. A missing setting is not an
// error here: the checks report it.
func resolveSettings(cmd *cobra.Command, f *cmdutil.Factory) (Settings, error) {
	var s Settings
	env, err := f.EnvUnchecked()
	s.EnvFile.Path, s.EnvFile.Source = f.EnvFile.Value, f.EnvFile.Describe()
	if err != nil {
		s.EnvFile.Err = err
		return s, nil
	}
	s.EnvFile.Exposed = settings.CheckEnvFile(env)
	s.EnvFile.Writable = settings.CheckEnvFileWritable(env)
	s.Unknown = f.UnknownVariables()
	r := settings.NewResolver(cmd.Flags(), env)
	s.Landing = r.Lookup(&settings.Landing.Spec)
	s.Warehouse = r.Lookup(&settings.Warehouse.Spec)
	s.Table = r.Lookup(&settings.Table.Spec)
	s.Routes = r.Lookup(&settings.Routes.Spec)
	s.RouteRules, _, s.RoutesErr = settings.Routes.Resolve(r)
	s.Gateway = r.Lookup(&settings.Gateway.Spec)
	s.UploadPrefix = r.Lookup(&settings.UploadPrefix.Spec)
	s.Endpoint = r.Lookup(&settings.Endpoint.Spec)
	s.Region = r.Lookup(&settings.Region.Spec)
	s.Credentials = credentialsFrom(env)
	s.S3, s.S3Err = f.S3Config(cmd)
	for _, spec := range settings.All() {
		switch {
		case len(spec.Env) == 0:
			continue // a per-run flag: only a flag sets it
		case spec == &settings.Landing.Spec, spec == &settings.Warehouse.Spec, spec == &settings.Table.Spec, spec == &settings.Routes.Spec:
			continue // checked by their own rows
		}
		s.Checked++
		if err := spec.Check(r); err != nil {
			s.Invalid = append(s.Invalid, err)
		}
	}
	return s, nil
}

// credentialsFrom finds the credentials the way storage.NewS3Client uses
// them: static keys from the environment or env file first, then a profile,
// then the SDK's default chain.
func credentialsFrom(env *config.Env) Credentials {
	var c Credentials
	id, idKey, idSrc := env.Lookup(AccessKeyEnv)
	secret, secretKey, secretSrc := env.Lookup(SecretKeyEnv)
	c.SessionToken = env.Get(SessionTokenEnv)
	profile, profKey, profSrc := env.Lookup(ProfileEnv)
	switch {
	case id != "" || secret != "":
		c.Kind, c.AccessKeyID, c.SecretAccessKey = CredStatic, id, secret
		var from []string
		if id != "" {
			from = append(from, idKey+" ("+string(idSrc)+")")
		} else {
			c.Missing = AccessKeyEnv
		}
		if secret != "" {
			from = append(from, secretKey+" ("+string(secretSrc)+")")
		} else {
			c.Missing = SecretKeyEnv
		}
		c.From = strings.Join(from, ", ")
	case profile != "":
		c.Kind, c.Profile = CredProfile, profile
		c.From = profKey + " (" + string(profSrc) + ")"
	default:
		c.Kind = CredChain
		c.From = "shared credentials file, SSO, container or instance role"
	}
	return c
}

// relativeEnvFile reports whether path is relative, which breaks under cron:
// cron starts jobs in $HOME, not where the operator tested.
func relativeEnvFile(path string) bool {
	return path != "" && !filepath.IsAbs(path)
}
