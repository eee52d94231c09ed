package tables

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/commands/cmdutil"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
)

// TestNewCmdTables checks flag and argument parsing with a runF capture:
// nothing is loaded.
func TestNewCmdTables(t *testing.T) {
	wh := t.TempDir()
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TABLE": "iot.readings"}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    func(t *testing.T, opts any)
		wantErr string
		usage   bool // a usage error (cmdutil.IsUsage)
	}{
		{
			name: "list",
			args: []string{"list"},
			env:  env,
			want: func(t *testing.T, opts any) {
				o := opts.(*ListOptions)
				if o.Lake == nil || o.Lake.URI() != wh {
					t.Errorf("lake %v, want %s", o.Lake, wh)
				}
			},
		},
		{
			name: "list flag beats env",
			args: []string{"list", "--warehouse", filepath.Join(wh, "other")},
			env:  env,
			want: func(t *testing.T, opts any) {
				if got := opts.(*ListOptions).Lake.URI(); got != filepath.Join(wh, "other") {
					t.Errorf("lake %s", got)
				}
			},
		},
		{name: "list without warehouse", args: []string{"list"}, env: map[string]string{}, usage: true,
			wantErr: "missing setting: pass --warehouse or set TIMELAKE_WAREHOUSE"},
		{
			name: "show default table",
			args: []string{"show"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if got := opts.(*ShowOptions).Table; got != (lake.TableName{Namespace: "iot", Name: "readings"}) {
					t.Errorf("table %v", got)
				}
			},
		},
		{
			name: "show bare name",
			args: []string{"show", "readings"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if got := opts.(*ShowOptions).Table; got != (lake.TableName{Namespace: "default", Name: "readings"}) {
					t.Errorf("table %v", got)
				}
			},
		},
		{name: "show without table", args: []string{"show"}, env: map[string]string{"TIMELAKE_WAREHOUSE": wh}, usage: true,
			wantErr: "missing table: pass NAME or set TIMELAKE_TABLE"},
		{name: "show bad name", args: []string{"show", "a.b.c"}, env: env, usage: true, wantErr: `NAME: invalid table name "a.b.c"`},
		{name: "show bad env name", args: []string{"show"}, env: map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TABLE": "x/y"},
			usage: true, wantErr: "TIMELAKE_TABLE (environment): invalid table name"},
		{name: "show two names", args: []string{"show", "a", "b"}, env: env, usage: true, wantErr: "accepts at most 1 arg(s)"},
		{
			name: "snapshots limit since",
			args: []string{"snapshots", "iot.other", "--limit", "5", "--since", "2026-01-05T10:00:00Z"},
			env:  env,
			want: func(t *testing.T, opts any) {
				o := opts.(*SnapshotsOptions)
				if o.Limit != 5 || !o.Since.Equal(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)) || o.Table.String() != "iot.other" {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "snapshots since duration",
			args: []string{"snapshots", "--since", "24h"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if d := time.Since(opts.(*SnapshotsOptions).Since); d < 24*time.Hour || d > 25*time.Hour {
					t.Errorf("since %v ago", d)
				}
			},
		},
		{name: "snapshots bad since", args: []string{"snapshots", "--since", "soon"}, env: env, usage: true, wantErr: "--since:"},
		{name: "snapshots negative limit", args: []string{"snapshots", "--limit", "-1"}, env: env, usage: true, wantErr: "--limit"},
		{
			name: "batches prefix",
			args: []string{"batches", "--prefix", "gateway-7/"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*BatchesOptions); o.Filter != (BatchFilter{Prefix: "gateway-7/"}) || o.Table.String() != "iot.readings" {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "batch with table",
			args: []string{"batch", "iot.other", "gateway-7/20260105T1000.csv"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*BatchOptions); o.BatchID != "gateway-7/20260105T1000.csv" || o.Table.String() != "iot.other" {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "batch id only",
			args: []string{"batch", "gateway-7/20260105T1000.csv"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*BatchOptions); o.BatchID != "gateway-7/20260105T1000.csv" || o.Table.String() != "iot.readings" {
					t.Errorf("options %+v", o)
				}
			},
		},
		{name: "batch no id", args: []string{"batch"}, env: env, usage: true, wantErr: "accepts between 1 and 2 arg(s)"},
		{
			name: "files",
			args: []string{"files", "iot.readings"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*FilesOptions); o.Table.String() != "iot.readings" {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "create",
			args: []string{"create", "iot.new", "--from-file", "x.csv", "--series-key", "site, device_id", "--partition", "hour",
				"--time-unit", "ms", "--assume-timezone", "Europe/Berlin"},
			env: map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TIME_COLUMN": "ts"},
			want: func(t *testing.T, opts any) {
				o := opts.(*CreateOptions)
				if o.Table.String() != "iot.new" || o.FromFile != "x.csv" || o.TimeColumn != "ts" ||
					strings.Join(o.SeriesKey, "|") != "site|device_id" || o.Partition != lake.Hour || o.TimeUnit != "ms" ||
					o.AssumeLocation.String() != "Europe/Berlin" {
					t.Errorf("options %+v", o)
				}
			},
		},
		{name: "create without file", args: []string{"create", "iot.new"}, env: env, usage: true, wantErr: "--from-file is required"},
		{name: "create bad partition", args: []string{"create", "--from-file", "x.csv", "--partition", "week"}, env: env,
			usage: true, wantErr: "--partition"},
		{name: "create bad unit", args: []string{"create", "--from-file", "x.csv", "--time-unit", "h"}, env: env,
			usage: true, wantErr: "--time-unit"},
		{
			name: "expire",
			args: []string{"expire", "iot.other", "--older-than", "7d", "--retain-last", "10", "--dry-run"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*ExpireOptions); o.Table.String() != "iot.other" || o.OlderThan != 7*24*time.Hour ||
					o.RetainLast != 10 || !o.DryRun {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "expire defaults",
			args: []string{"expire"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*ExpireOptions); o.Table.String() != "iot.readings" || o.OlderThan != 0 || o.RetainLast != 0 || o.DryRun {
					t.Errorf("options %+v", o)
				}
			},
		},
		{name: "expire bad age", args: []string{"expire", "--older-than", "soon"}, env: env, usage: true, wantErr: "--older-than"},
		{name: "expire zero age", args: []string{"expire", "--older-than", "0s"}, env: env, usage: true, wantErr: "above zero"},
		{name: "expire negative retain", args: []string{"expire", "--retain-last", "-2"}, env: env, usage: true, wantErr: "--retain-last"},
		{
			name: "batches limit since",
			args: []string{"batches", "--limit", "10", "--since", "2026-01-05"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*BatchesOptions); o.Filter != (BatchFilter{Limit: 10, Since: time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)}) {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "maintain",
			args: []string{"maintain", "iot.other", "--dry-run", "--budget", "2m", "--orphans"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*MaintainOptions); o.Table.String() != "iot.other" || !o.DryRun || o.Budget != 2*time.Minute || !o.Orphans {
					t.Errorf("options %+v", o)
				}
			},
		},
		{
			name: "maintain defaults",
			args: []string{"maintain"},
			env:  env,
			want: func(t *testing.T, opts any) {
				if o := opts.(*MaintainOptions); o.Table.String() != "iot.readings" || o.DryRun || o.Budget != 0 || o.Orphans {
					t.Errorf("options %+v", o)
				}
			},
		},
		{name: "maintain bad budget", args: []string{"maintain", "--budget", "soon"}, env: env, usage: true, wantErr: "--budget"},
		{
			name: "alter",
			args: []string{"alter", "iot.other", "--set", "timelake.snapshot-retention=1h", "--set", "write.metadata.previous-versions-max = 3",
				"--set", "commit.note=a=b,c", "--unset", "timelake.min-snapshots", "--unset", "history.expire.max-snapshot-age-ms", "--dry-run"},
			env: env,
			want: func(t *testing.T, opts any) {
				o := opts.(*AlterOptions)
				want := map[string]string{"timelake.snapshot-retention": "1h", "write.metadata.previous-versions-max": "3", "commit.note": "a=b,c"}
				if o.Table.String() != "iot.other" || !o.DryRun || !maps.Equal(o.Set, want) ||
					!slices.Equal(o.Unset, []string{"history.expire.max-snapshot-age-ms", "timelake.min-snapshots"}) {
					t.Errorf("options %+v", o)
				}
			},
		},
		{name: "alter nothing", args: []string{"alter"}, env: env, usage: true, wantErr: "nothing to change"},
		{name: "alter unknown key", args: []string{"alter", "--set", "timelake.bogus=1"}, env: env, usage: true,
			wantErr: "--set timelake.bogus: unknown property (the timelake.* properties that can be set: timelake.auto-maintain, "},
		{name: "alter misspelled key", args: []string{"alter", "--set", "timelake.snapshot-retension=1h"}, env: env, usage: true,
			wantErr: "--set timelake.snapshot-retension: unknown property; did you mean timelake.snapshot-retention? (the timelake.* properties"},
		{name: "alter key without its prefix", args: []string{"alter", "--set", "snapshot-retention=1m"}, env: env, usage: true,
			wantErr: "--set snapshot-retention: not a property timelake reads: timelake's settings start with timelake.; did you mean timelake.snapshot-retention?"},
		{name: "unset key without its prefix", args: []string{"alter", "--unset", "evolve"}, env: env, usage: true,
			wantErr: "--unset evolve: not a property timelake reads: timelake's settings start with timelake.; did you mean timelake.evolve?"},
		{name: "alter contract key", args: []string{"alter", "--set", "timelake.series-key=site"}, env: env, usage: true,
			wantErr: "--set timelake.series-key: part of the table contract"},
		{name: "unset contract key", args: []string{"alter", "--unset", "timelake.time-column"}, env: env, usage: true,
			wantErr: "--unset timelake.time-column: part of the table contract"},
		{name: "unset the load history", args: []string{"alter", "--unset", "timelake.load-history"}, env: env, usage: true,
			wantErr: "--unset timelake.load-history: the load history's segment list, kept by timelake"},
		{name: "alter bad value", args: []string{"alter", "--set", "timelake.snapshot-retention=soon"}, env: env, usage: true,
			wantErr: `timelake.snapshot-retention: "soon" is not a duration`},
		{name: "alter reserved key", args: []string{"alter", "--set", "format-version=3"}, env: env, usage: true,
			wantErr: "--set format-version: reserved by Iceberg"},
		{name: "alter no equals", args: []string{"alter", "--set", "timelake.min-snapshots"}, env: env, usage: true,
			wantErr: `--set: expected KEY=VALUE`},
		{name: "alter empty value", args: []string{"alter", "--set", "write.x="}, env: env, usage: true, wantErr: "empty value"},
		{name: "alter twice", args: []string{"alter", "--set", "a=1", "--set", "a=2"}, env: env, usage: true, wantErr: "--set a is given twice"},
		{name: "alter set and unset", args: []string{"alter", "--set", "a=1", "--unset", "a"}, env: env, usage: true,
			wantErr: "a is given to both --set and --unset"},
		{name: "unset with a value", args: []string{"alter", "--unset", "a=1"}, env: env, usage: true, wantErr: "--unset: expected a property name"},
		{
			name: "delete",
			args: []string{"delete", "iot.other", "--where", "device=gw-7", "--where", "site=a=b", "--where", "device=gw-8",
				"--from", "2026-01-05T10:00:00Z", "--to", "2026-01-05T13:00:00+01:00", "--dry-run", "--yes"},
			env: env,
			want: func(t *testing.T, opts any) {
				o := opts.(*DeleteOptions)
				p := o.Predicate
				if o.Table.String() != "iot.other" || !o.DryRun || !o.Yes || len(p.Where) != 2 ||
					p.Where[0].Column != "device" || !slices.Equal(p.Where[0].Values, []string{"gw-7", "gw-8"}) ||
					p.Where[1].Column != "site" || !slices.Equal(p.Where[1].Values, []string{"a=b"}) ||
					!p.From.Equal(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)) || !p.To.Equal(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)) {
					t.Errorf("options %+v", o)
				}
			},
		},
		{name: "delete without predicate", args: []string{"delete", "iot.other"}, env: env, usage: true, wantErr: "needs a predicate"},
		{name: "delete dry run without predicate", args: []string{"delete", "iot.other", "--dry-run"}, env: env, usage: true, wantErr: "needs a predicate"},
		{name: "delete without table", args: []string{"delete", "--where", "a=b"}, env: env, usage: true, wantErr: "expected NAME (the table to delete from"},
		{name: "delete bad where", args: []string{"delete", "t", "--where", "device"}, env: env, usage: true, wantErr: "--where: expected COLUMN=VALUE"},
		{name: "delete duration", args: []string{"delete", "t", "--from", "24h"}, env: env, usage: true, wantErr: "--from: expected an RFC 3339 time"},
		{name: "delete empty range", args: []string{"delete", "t", "--from", "2026-01-05T10:00:00Z", "--to", "2026-01-05T10:00:00Z"}, env: env,
			usage: true, wantErr: "--to must be after --from"},
		{name: "create bad zone", args: []string{"create", "--from-file", "x.csv", "--assume-timezone", "Mars/Olympus"}, env: env,
			usage: true, wantErr: "--assume-timezone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ios, _, _ := iostreams.Test()
			f := &cmdutil.Factory{IO: ios, LogLevel: "warn", Getenv: func(k string) (string, bool) {
				v, ok := tc.env[k]
				return v, ok
			}}
			var got any
			cmd := NewCmdTables(f, func(_ context.Context, opts any) error {
				got = opts
				return nil
			})
			cmdutil.TypeUsageErrors(cmd)
			cmd.SetArgs(tc.args)
			cmd.SetOut(ios.ErrOut)
			cmd.SetErr(ios.ErrOut)
			_, err := cmd.ExecuteC()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				if tc.usage != cmdutil.IsUsage(err) {
					t.Errorf("usage error: %v, want %v", cmdutil.IsUsage(err), tc.usage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("run function not called")
			}
			tc.want(t, got)
		})
	}
}

// TestHelp parses --help of every subcommand.
func TestHelp(t *testing.T) {
	for _, sub := range []string{"", "list", "show", "snapshots", "batches", "batch", "files", "create", "maintain", "alter", "expire", "delete"} {
		ios, _, _ := iostreams.Test()
		f := &cmdutil.Factory{IO: ios, Getenv: func(string) (string, bool) { return "", false }}
		cmd := NewCmdTables(f, nil)
		var out strings.Builder
		cmd.SetOut(&out)
		args := []string{"--help"}
		if sub != "" {
			args = []string{sub, "--help"}
		}
		cmd.SetArgs(args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%s --help: %v", sub, err)
		}
		if !strings.Contains(out.String(), "Usage:") {
			t.Errorf("%s --help printed no usage:\n%s", sub, out.String())
		}
	}
}
