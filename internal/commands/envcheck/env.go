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
	"time"

	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	ingestcmd "github.com/timelake/timelake/internal/commands/ingest"
	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/storage"
)

// DefaultTimeout bounds each network check (connect, each S3 call) unless
// --timeout says otherwise.
const DefaultTimeout = 5 * time.Second

// EnvFileEnv names the variable that gives the env file when --env-file is
// not set (the root command reads the same one).
const EnvFileEnv = "TIMELAKE_ENV_FILE"

// Credential variables of the standard AWS chain that timelake reads itself.
const (
	AccessKeyEnv    = "AWS_ACCESS_KEY_ID"
	SecretKeyEnv    = "AWS_SECRET_ACCESS_KEY"
	SessionTokenEnv = "AWS_SESSION_TOKEN"
	ProfileEnv      = "AWS_PROFILE"
)

// RunFuncs replace the run functions of the group's commands in tests of
// flag parsing; a nil field keeps the real one.
type RunFuncs struct {
	Check func(context.Context, *CheckOptions) error
	Show  func(context.Context, *ShowOptions) error
}

// NewCmdEnv builds the `env` group with its `check` and `show` commands.
// runF may be nil.
func NewCmdEnv(f *cmdutil.Factory, runF *RunFuncs) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Check or show the settings that ingest will use",
		Long: `Check or show the settings that "timelake ingest" will use: flags, then the
environment, then --env-file. Run "timelake env check --env-file timelake.env"
on the poller host before you add the cron line.`,
		Args: cobra.NoArgs,
	}
	pf := cmd.PersistentFlags()
	pf.String("landing", "", "landing bucket: bucket name, s3://bucket/prefix, or a local folder"+cmdutil.EnvHelp(ingestcmd.LandingEnv...))
	pf.String("warehouse", "", "warehouse: s3://bucket/prefix or a local folder"+cmdutil.EnvHelp(ingestcmd.WarehouseEnv...))
	pf.String("table", "", "table name, namespace.table"+cmdutil.EnvHelp(ingestcmd.TableEnv...))
	if runF == nil {
		runF = &RunFuncs{}
	}
	cmd.AddCommand(NewCmdCheck(f, runF.Check), NewCmdShow(f, runF.Show))
	return cmd
}

// Settings are the resolved settings that env check and env show look at.
// Values are as given; Credentials holds secrets and must only be printed
// through config.Mask.
type Settings struct {
	EnvFile     EnvFile
	Landing     config.Setting
	Warehouse   config.Setting
	Table       config.Setting
	Endpoint    config.Setting
	Region      config.Setting
	Credentials Credentials
	// S3 is the connection ingest would use; S3Err is why it could not be
	// built from the settings (e.g. an invalid TIMELAKE_S3_VIRTUAL_HOSTED).
	S3    storage.S3Config
	S3Err error
}

// EnvFile describes the env file of a run.
type EnvFile struct {
	Path   string // as given; "" when none
	Source string // "--env-file" or "TIMELAKE_ENV_FILE (environment)"
	// Err is why the file could not be read; every other setting is then
	// unknown.
	Err error
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

// resolveSettings reads every setting through the factory, as ingest does.
// A missing setting is not an error here: the checks report it.
func resolveSettings(cmd *cobra.Command, f *cmdutil.Factory) (Settings, error) {
	var s Settings
	s.EnvFile.Path, s.EnvFile.Source = f.EnvFile, "--env-file"
	if s.EnvFile.Path == "" {
		if v, ok := f.Getenv(EnvFileEnv); ok && v != "" {
			s.EnvFile.Path, s.EnvFile.Source = v, EnvFileEnv+" (environment)"
		}
	}
	env, err := f.Env()
	if err != nil {
		s.EnvFile.Err = err
		return s, nil
	}
	for _, r := range []struct {
		dst  *config.Setting
		flag string
		keys []string
	}{
		{&s.Landing, "landing", ingestcmd.LandingEnv},
		{&s.Warehouse, "warehouse", ingestcmd.WarehouseEnv},
		{&s.Table, "table", ingestcmd.TableEnv},
		{&s.Endpoint, "endpoint", cmdutil.EndpointEnv},
		{&s.Region, "region", cmdutil.RegionEnv},
	} {
		if *r.dst, err = f.Resolve(cmd, r.flag, r.keys...); err != nil {
			return s, err
		}
	}
	s.Credentials = credentialsFrom(env)
	s.S3, s.S3Err = f.S3Config(cmd)
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
