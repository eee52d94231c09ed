package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/commands"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/testutil/s3fault"
)

// routeTables are the tables of the routes case, each loaded from the
// landing folder of its name.
var routeTables = []string{"readings", "events", "meters"}

func init() {
	extraModes["routed"] = routedMode
	extraModes["single"] = singleMode
}

// routedMode is one `timelake ingest --route` run that loads the three
// tables of the routes case (docs/routing.md).
func routedMode(ctx context.Context, _ *s3.Client, s Setup, _ string, r *Result) error {
	args := []string{}
	for _, t := range routeTables {
		args = append(args, "--route", t+"/**=bench."+t)
	}
	var doc struct {
		Tables []struct {
			Table  string `json:"table"`
			Loaded int    `json:"loaded"`
			Rows   int64  `json:"rows"`
		} `json:"tables"`
	}
	proxy, err := s3fault.Start(os.Getenv("TIMELAKE_TEST_S3_ENDPOINT"), 1)
	if err != nil {
		return err
	}
	defer proxy.Close()
	if err := ingestCommand(ctx, proxy.URL, s, args, &doc); err != nil {
		return err
	}
	r.Requests = int64(proxy.Requests(""))
	loaded := 0
	for _, t := range doc.Tables {
		loaded += t.Loaded
		r.Rows += t.Rows
	}
	if len(doc.Tables) != len(routeTables) || loaded != s.Files {
		return fmt.Errorf("routed: loaded %d of %d files into %d tables", loaded, s.Files, len(doc.Tables))
	}
	return nil
}

// singleMode is the baseline of routedMode: three single-table runs, one
// after the other, each `timelake ingest --table --prefix` of its folder
// (three cron lines, docs/cron.md).
func singleMode(ctx context.Context, _ *s3.Client, s Setup, _ string, r *Result) error {
	proxy, err := s3fault.Start(os.Getenv("TIMELAKE_TEST_S3_ENDPOINT"), 1)
	if err != nil {
		return err
	}
	defer proxy.Close()
	loaded := 0
	for _, t := range routeTables {
		var rep struct {
			Loaded int   `json:"loaded"`
			Rows   int64 `json:"rows"`
		}
		if err := ingestCommand(ctx, proxy.URL, s, []string{"--table", "bench." + t, "--prefix", t + "/"}, &rep); err != nil {
			return err
		}
		loaded += rep.Loaded
		r.Rows += rep.Rows
	}
	r.Requests = int64(proxy.Requests(""))
	if loaded != s.Files {
		return fmt.Errorf("single: loaded %d of %d files", loaded, s.Files)
	}
	return nil
}

// ingestCommand runs `timelake ingest --json` with args on the setup's
// buckets through endpoint (a proxy that counts the requests), as cron
// runs it (the command, its settings and report), and decodes its report
// into doc.
func ingestCommand(ctx context.Context, endpoint string, s Setup, args []string, doc any) error {
	env := map[string]string{
		"AWS_ENDPOINT_URL_S3":   endpoint,
		"AWS_REGION":            os.Getenv("TIMELAKE_TEST_S3_REGION"),
		"AWS_ACCESS_KEY_ID":     os.Getenv("TIMELAKE_TEST_S3_ACCESS_KEY"),
		"AWS_SECRET_ACCESS_KEY": os.Getenv("TIMELAKE_TEST_S3_SECRET_KEY"),
	}
	if env["AWS_REGION"] == "" {
		env["AWS_REGION"] = "us-east-1"
	}
	ios, out, errOut := iostreams.Test()
	args = append([]string{"ingest", "--json", "--landing", "s3://" + s.Landing, "--warehouse", "s3://" + s.Lake + "/warehouse",
		"--series-key", "device_id"}, args...)
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if code := commands.Execute(ctx, args, ios, getenv); code != 0 {
		return fmt.Errorf("timelake %v: exit %d\n%s", args, code, errOut)
	}
	if err := json.Unmarshal(out.Bytes(), doc); err != nil {
		return fmt.Errorf("timelake %v: the report: %w", args, err)
	}
	return nil
}
