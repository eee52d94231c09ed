package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// maintenanceCase is where the maintenance scenario runs: the binary's
// environment, how a landing file is (re-)sent, and the warehouse opened
// by the test to read the table back.
type maintenanceCase struct {
	dir  string
	env  []string
	send func(t *testing.T, key string, body []byte)
	open func(t *testing.T) *lake.Lake
}

// TestMaintenanceLocal runs the maintenance scenario on local folders.
func TestMaintenanceLocal(t *testing.T) {
	dir := t.TempDir()
	maintenanceScenario(t, maintenanceCase{
		dir: dir,
		env: []string{"TIMELAKE_WAREHOUSE=./lake", "TIMELAKE_TABLE=iot.readings", "LANDING_BUCKET=./landing"},
		send: func(t *testing.T, key string, body []byte) {
			p := filepath.Join(dir, "landing", filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, body, 0o644); err != nil {
				t.Fatal(err)
			}
			complete(t, p)
		},
		open: func(t *testing.T) *lake.Lake {
			l, err := lake.Open(context.Background(), filepath.Join(dir, "lake"), lake.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
	})
}

// TestMaintenanceS3 runs the maintenance scenario with the landing bucket
// and the warehouse on the S3 server.
func TestMaintenanceS3(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	landing, lakeBucket := srv.NewBucket(t), srv.NewBucket(t)
	maintenanceScenario(t, maintenanceCase{
		dir: t.TempDir(),
		env: []string{
			"AWS_ENDPOINT_URL_S3=" + srv.Endpoint, "AWS_REGION=" + srv.Region,
			"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey,
			"TIMELAKE_WAREHOUSE=s3://" + lakeBucket + "/warehouse", "TIMELAKE_TABLE=iot.readings", "LANDING_BUCKET=" + landing,
		},
		send: func(t *testing.T, key string, body []byte) {
			if _, err := client.PutObject(context.Background(), &s3.PutObjectInput{
				Bucket: aws.String(landing), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatal(err)
			}
		},
		open: func(t *testing.T) *lake.Lake {
			l, err := lake.Open(context.Background(), "s3://"+lakeBucket+"/warehouse", lake.Options{S3: client})
			if err != nil {
				t.Fatal(err)
			}
			return l
		},
	})
}

// maintenanceScenario: gateway files are ingested without inline
// maintenance; `tables maintain` compacts them (the rows read back are the
// same); after `tables alter` shortens the snapshot retention, `tables
// maintain` expires the snapshots, `tables batch` still answers loaded from
// the load history, and a re-sent copy of a file (under its key, and under
// another key) is already loaded in the next ingest; an unknown timelake.*
// key is refused with exit 2.
func maintenanceScenario(t *testing.T, c maintenanceCase) {
	examples := filepath.Join("..", "..", "examples", "landing")
	var keys []string
	bodies := map[string][]byte{}
	err := filepath.WalkDir(examples, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(examples, p)
		key := filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		keys, bodies[key] = append(keys, key), b
		c.send(t, key, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	timelake := func(want int, args ...string) string {
		t.Helper()
		r := run(t, c.dir, c.env, args...)
		if r.code != want {
			t.Fatalf("timelake %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
		}
		return r.stdout
	}
	decode := func(s string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(s), v); err != nil {
			t.Fatalf("not one JSON document: %v\n%s", err, s)
		}
	}

	timelake(0, "ingest", "--series-key", "device_id", "--maintenance-budget", "0")
	rows := tableRows(t, c.open(t))
	if len(rows) != 2100 {
		t.Fatalf("%d rows after ingest, want 2100", len(rows))
	}
	var files []struct{ Partition string }
	decode(timelake(0, "tables", "files", "--json"), &files)
	if len(files) != 7 {
		t.Fatalf("%d data files after ingest, want 7", len(files))
	}

	// Compaction: the six small files of 2026-01-05 (one size tier) are
	// merged into one; 2026-01-06 has one file.
	type report struct {
		Compaction *struct {
			SnapshotID *int64 `json:"snapshot_id"`
			Groups     []struct {
				Partition string
				FilesIn   int   `json:"files_in"`
				FilesOut  int   `json:"files_out"`
				Rows      int64 `json:"rows"`
			}
		}
		Expiry *struct {
			Expired        int `json:"expired"`
			KeysRemembered int `json:"keys_remembered"`
		}
		Settings []struct{ Property, Value, Source string }
	}
	var rep report
	decode(timelake(0, "tables", "maintain", "--json"), &rep)
	if rep.Compaction == nil || rep.Compaction.SnapshotID == nil || len(rep.Compaction.Groups) != 1 {
		t.Fatalf("maintain: %+v", rep)
	}
	if g := rep.Compaction.Groups[0]; g.Partition != "time_day=2026-01-05" || g.FilesIn != 6 || g.FilesOut != 1 || g.Rows != 1800 {
		t.Errorf("compaction group %+v", g)
	}
	decode(timelake(0, "tables", "files", "--json"), &files)
	if len(files) != 2 {
		t.Errorf("%d data files after maintain, want 2", len(files))
	}
	if after := tableRows(t, c.open(t)); !slices.Equal(after, rows) {
		t.Fatalf("rows changed by compaction: %d rows, want the %d read before", len(after), len(rows))
	}

	// A retention of a second, keeping one snapshot: the next round expires
	// every append.
	out := timelake(0, "tables", "alter", "--set", "timelake.snapshot-retention=1s", "--set", "timelake.min-snapshots=1")
	if !strings.Contains(out, "timelake.snapshot-retention\t\t1s\ttrue\n") {
		t.Errorf("alter printed:\n%s", out)
	}
	time.Sleep(1100 * time.Millisecond)
	rep = report{}
	decode(timelake(0, "tables", "maintain", "--json"), &rep)
	if rep.Expiry == nil || rep.Expiry.Expired < len(keys) || rep.Expiry.KeysRemembered != len(keys) {
		t.Fatalf("maintain after alter: expiry %+v, want the %d appends expired and their keys remembered", rep.Expiry, len(keys))
	}
	if i := slices.IndexFunc(rep.Settings, func(s struct{ Property, Value, Source string }) bool {
		return s.Property == "timelake.snapshot-retention"
	}); i < 0 || rep.Settings[i].Value != "1s" || rep.Settings[i].Source != "property" {
		t.Errorf("settings %+v", rep.Settings)
	}
	var snaps []struct {
		BatchID *string `json:"batch_id"`
	}
	decode(timelake(0, "tables", "snapshots", "--json"), &snaps)
	for _, s := range snaps {
		if s.BatchID != nil {
			t.Errorf("snapshot of %s not expired", *s.BatchID)
		}
	}

	key := "gateway-2/20260105T1000.csv.gz"
	var st struct {
		Loaded     bool
		Source     *string
		Rows       int64
		SourceSize int64 `json:"source_size"`
	}
	decode(timelake(0, "tables", "batch", key, "--json"), &st)
	if !st.Loaded || st.Source == nil || *st.Source != "load-history" || st.Rows != 300 || st.SourceSize != int64(len(bodies[key])) {
		t.Errorf("tables batch %s: %+v", key, st)
	}
	if out := timelake(4, "tables", "batch", "gateway-9/never.csv"); !strings.Contains(out, "\tnot-loaded\t") {
		t.Errorf("tables batch of an unknown key:\n%s", out)
	}

	// The same file again under its key, and a copy under another key: both
	// already loaded, nothing loaded twice.
	c.send(t, key, bodies[key])
	c.send(t, "gateway-2/copy-of-20260105T1000.csv.gz", bodies[key])
	var ing struct {
		Loaded        int
		AlreadyLoaded int `json:"already_loaded"`
		Files         []struct {
			Key, Status string
			SameAs      string `json:"same_as"`
		}
	}
	decode(timelake(0, "ingest", "--json"), &ing)
	if ing.Loaded != 0 || ing.AlreadyLoaded != 2 || len(ing.Files) != 2 {
		t.Fatalf("ingest of the re-sent files: %+v", ing)
	}
	for _, f := range ing.Files {
		if f.Status != "already-loaded" || (f.Key != key && f.SameAs != key) {
			t.Errorf("re-sent file %+v", f)
		}
	}
	if after := tableRows(t, c.open(t)); !slices.Equal(after, rows) {
		t.Fatalf("rows changed: %d rows, want the %d read before", len(after), len(rows))
	}

	r := run(t, c.dir, c.env, "tables", "alter", "--set", "timelake.bogus=1")
	if r.code != 2 || !strings.Contains(r.stderr, "timelake.bogus: unknown property") || !strings.Contains(r.stderr, "timelake.snapshot-retention") {
		t.Errorf("alter of an unknown key: exit %d\n%s", r.code, r.stderr)
	}
}

// tableRows reads every row of iot.readings (iceberg-go's scan), each as
// its values joined, sorted.
func tableRows(t *testing.T, l *lake.Lake) []string {
	t.Helper()
	ctx := context.Background()
	tbl, err := l.LoadTable(ctx, lake.TableName{Namespace: "iot", Name: "readings"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Iceberg().Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	rr := array.NewTableReader(at, 1024)
	defer rr.Release()
	var out []string
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := range int(rec.NumRows()) {
			vals := make([]string, rec.NumCols())
			for c := range vals {
				vals[c] = rec.Column(c).ValueStr(i)
			}
			out = append(out, strings.Join(vals, "|"))
		}
	}
	slices.Sort(out)
	return out
}
