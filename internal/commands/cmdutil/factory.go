// Package cmdutil holds what every command shares: the Factory that resolves
// settings (flags > environment > --env-file) and builds clients lazily, and
// the typed errors that main maps to exit codes.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"

	"github.com/timelake/timelake/internal/config"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// Environment variables of the S3 connection. The endpoint variables are
// tried in this order (DESIGN.md, "Settings").
var (
	EndpointEnv      = []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"}
	RegionEnv        = []string{"AWS_REGION", "AWS_DEFAULT_REGION"}
	VirtualHostedEnv = []string{"TIMELAKE_S3_VIRTUAL_HOSTED"}
)

// Factory is built once per invocation. Nothing in it does I/O until a
// command asks, so --help and usage errors never touch the network.
type Factory struct {
	IO     *iostreams.IOStreams
	Getenv func(string) (string, bool)

	// Global flag values, bound by the root command.
	EnvFile  string
	JSON     bool
	LogLevel string

	env    *config.Env
	logger *slog.Logger
	s3     *s3.Client
	s3cfg  storage.S3Config
}

// Env returns the settings lookup (environment, then the env file).
func (f *Factory) Env() (*config.Env, error) {
	if f.env != nil {
		return f.env, nil
	}
	path := f.EnvFile
	if path == "" {
		path, _ = f.Getenv("TIMELAKE_ENV_FILE")
	}
	e, err := config.LoadEnv(path, f.Getenv)
	if err != nil {
		return nil, &FlagError{Err: err} // a settings problem: exit 2
	}
	f.env = e
	return e, nil
}

// Logger returns the stderr logger at --log-level (text, or JSON with --json).
func (f *Factory) Logger() *slog.Logger {
	if f.logger != nil {
		return f.logger
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.LogLevel)); err != nil {
		lvl = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if f.JSON {
		f.logger = slog.New(slog.NewJSONHandler(f.IO.ErrOut, opts))
	} else {
		f.logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, opts))
	}
	return f.logger
}

// Resolve returns a setting from its flag if the user set it, else from the
// first of envKeys found in the environment or env file, else the flag's
// default.
func (f *Factory) Resolve(cmd *cobra.Command, flag string, envKeys ...string) (config.Setting, error) {
	fl := cmd.Flags().Lookup(flag)
	if fl == nil {
		return config.Setting{}, fmt.Errorf("internal: no flag --%s", flag)
	}
	if fl.Changed {
		return config.Setting{Name: flag, Value: fl.Value.String(), Source: config.FromFlag}, nil
	}
	env, err := f.Env()
	if err != nil {
		return config.Setting{}, err
	}
	if v, k, src := env.Lookup(envKeys...); v != "" {
		return config.Setting{Name: flag, Value: v, Source: src, Key: k}, nil
	}
	return config.Setting{Name: flag, Value: fl.DefValue, Source: config.FromDefault}, nil
}

// MustResolve is Resolve for settings that are required: a missing one is a
// usage error naming the flag and the variable.
func (f *Factory) MustResolve(cmd *cobra.Command, flag string, envKeys ...string) (config.Setting, error) {
	s, err := f.Resolve(cmd, flag, envKeys...)
	if err != nil {
		return s, err
	}
	if strings.TrimSpace(s.Value) == "" {
		return s, FlagErrorf("missing setting: pass --%s or set %s", flag, strings.Join(envKeys, " or "))
	}
	return s, nil
}

// S3Config resolves the S3 connection settings.
func (f *Factory) S3Config(cmd *cobra.Command) (storage.S3Config, error) {
	env, err := f.Env()
	if err != nil {
		return storage.S3Config{}, err
	}
	endpoint, err := f.Resolve(cmd, "endpoint", EndpointEnv...)
	if err != nil {
		return storage.S3Config{}, err
	}
	region, err := f.Resolve(cmd, "region", RegionEnv...)
	if err != nil {
		return storage.S3Config{}, err
	}
	vh, err := f.Resolve(cmd, "s3-virtual-hosted", VirtualHostedEnv...)
	if err != nil {
		return storage.S3Config{}, err
	}
	virtual := false
	if vh.Value != "" {
		if virtual, err = strconv.ParseBool(vh.Value); err != nil {
			return storage.S3Config{}, FlagErrorf("invalid %s=%q: expected true or false", vh.Describe(), vh.Value)
		}
	}
	return storage.S3Config{
		Endpoint:        endpoint.Value,
		Region:          region.Value,
		VirtualHosted:   virtual,
		AccessKeyID:     env.Get("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: env.Get("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    env.Get("AWS_SESSION_TOKEN"),
		Profile:         env.Get("AWS_PROFILE"),
	}, nil
}

// S3Client builds (once) the S3 client for the resolved settings.
func (f *Factory) S3Client(ctx context.Context, cmd *cobra.Command) (*s3.Client, storage.S3Config, error) {
	if f.s3 != nil {
		return f.s3, f.s3cfg, nil
	}
	cfg, err := f.S3Config(cmd)
	if err != nil {
		return nil, cfg, err
	}
	c, err := storage.NewS3Client(ctx, cfg)
	if err != nil {
		if errors.Is(err, storage.ErrInvalidEndpoint) {
			return nil, cfg, &FlagError{Err: err}
		}
		return nil, cfg, err
	}
	f.s3, f.s3cfg = c, cfg
	return c, cfg, nil
}

// OpenStore opens a landing location: an S3 bucket/prefix or a folder.
func (f *Factory) OpenStore(ctx context.Context, cmd *cobra.Command, loc storage.Location) (storage.Store, error) {
	if !loc.IsS3() {
		return storage.NewLocalStore(loc.Dir)
	}
	c, cfg, err := f.S3Client(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return storage.NewS3Store(c, loc.Bucket, loc.Prefix,
		storage.S3StoreOptions{Tigris: storage.IsTigrisEndpoint(cfg.Endpoint)}), nil
}

// OpenLake opens the warehouse at uri.
func (f *Factory) OpenLake(ctx context.Context, cmd *cobra.Command, uri string) (*lake.Lake, error) {
	loc, err := storage.ParseLocation(uri, false)
	if err != nil {
		return nil, FlagErrorf("warehouse: %v", err)
	}
	opts := lake.Options{Logger: f.Logger()}
	if loc.IsS3() {
		c, cfg, err := f.S3Client(ctx, cmd)
		if err != nil {
			return nil, err
		}
		opts.S3, opts.Tigris = c, storage.IsTigrisEndpoint(cfg.Endpoint)
	}
	return lake.Open(ctx, uri, opts)
}

// EnvHelp renders the "(env NAME)" suffix of a flag's help text.
func EnvHelp(keys ...string) string {
	return " (env " + strings.Join(keys, ", ") + ")"
}
