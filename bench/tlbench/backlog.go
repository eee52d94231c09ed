package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3fault"
)

// backlogOptions are the flags of tlbench backlog.
type backlogOptions struct {
	files  int           // small files, one snapshot each, loaded with maintenance off
	delay  time.Duration // added to every request to the warehouse once loaded
	rounds int           // maintenance rounds measured
	budget time.Duration // each round's budget (ingest's default: 10s)
}

// requestKinds are the kinds of requests a round is measured by, in the
// order the fault proxy matches them (the first rule that matches counts
// the request and holds it for the delay).
var requestKinds = []s3fault.Rule{
	{Name: "GET manifest", Method: http.MethodGet, Key: "*/metadata/*.avro"},
	{Name: "GET metadata", Method: http.MethodGet, Key: "*/metadata/*"},
	{Name: "GET data", Method: http.MethodGet, Key: "*/data/*"},
	{Name: "LIST", Method: http.MethodGet, Query: "list-type"},
	{Name: "HEAD", Method: http.MethodHead},
	{Name: "PUT metadata", Method: http.MethodPut, Key: "*/metadata/*"},
	{Name: "PUT data", Method: http.MethodPut, Key: "*/data/*"},
	{Name: "DELETE", Method: http.MethodDelete},
	{Name: "POST", Method: http.MethodPost},
	{Name: "other"},
}

// runBacklog measures maintenance on a table with a backlog (docs/maintenance.md,
// "On real object storage"): o.files small files loaded one snapshot each
// with maintenance off, snapshots kept 1 s, then o.rounds rounds of o.budget
// each with every request to the warehouse held o.delay by the fault proxy.
// It prints each round's work, time and requests by kind, then the files
// left that nothing references (orphan removal, dry run).
func runBacklog(ctx context.Context, o backlogOptions, w io.Writer) error {
	plain, err := s3Client(ctx, nil)
	if err != nil {
		return err
	}
	bucket := fmt.Sprintf("tlbench-backlog-%d", time.Now().UnixNano())
	if _, err := plain.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	proxy, err := s3fault.Start(os.Getenv("TIMELAKE_TEST_S3_ENDPOINT"), 1)
	if err != nil {
		return err
	}
	defer proxy.Close()
	region := cmp.Or(os.Getenv("TIMELAKE_TEST_S3_REGION"), "us-east-1")
	client, err := storage.NewS3Client(ctx, storage.S3Config{Endpoint: proxy.URL, Region: region,
		AccessKeyID: os.Getenv("TIMELAKE_TEST_S3_ACCESS_KEY"), SecretAccessKey: os.Getenv("TIMELAKE_TEST_S3_SECRET_KEY")})
	if err != nil {
		return err
	}
	l, err := lake.Open(ctx, "s3://"+bucket+"/warehouse", lake.Options{S3: client})
	if err != nil {
		return err
	}
	landingDir, err := os.MkdirTemp("", "tlbench-backlog")
	if err != nil {
		return err
	}
	defer os.RemoveAll(landingDir)
	old := time.Now().Add(-time.Hour)
	for i := range o.files {
		p := filepath.Join(landingDir, fmt.Sprintf("gw-%02d", i%20), fmt.Sprintf("f%06d.csv", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		var b strings.Builder
		b.WriteString("time,device_id,temperature_c\n")
		t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		for j := range 10 {
			fmt.Fprintf(&b, "%s,dev-%d,%d.5\n", t0.Add(time.Duration(j)*time.Second).Format(time.RFC3339), i%20, j)
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(p, old, old); err != nil {
			return err
		}
	}
	landing, err := storage.NewLocalStore(landingDir)
	if err != nil {
		return err
	}
	name := lake.TableName{Namespace: "bench", Name: "backlog"}
	fmt.Fprintf(os.Stderr, "backlog: loading %d files, one snapshot each\n", o.files)
	rep, err := ingest.Run(ctx, ingest.Config{Landing: landing, Lake: l, Table: name, SeriesKey: []string{"device_id"},
		FilesPerCommit: 1, MaintenanceBudget: 0, SettleTime: -1, OpenEndSettleTime: -1})
	if err != nil {
		return err
	}
	if rep.Loaded != o.files {
		return fmt.Errorf("loaded %d of %d files", rep.Loaded, o.files)
	}
	tbl, err := l.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropSnapshotRetention: "1s", lake.PropOrphanMinAge: "1s"}, nil); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	rules := make([]*s3fault.Rule, len(requestKinds))
	for i, k := range requestKinds {
		k.Delay = o.delay
		rules[i] = proxy.Add(k)
	}
	counts := func() []int {
		out := make([]int, len(requestKinds))
		for i, k := range requestKinds {
			out[i] = proxy.Counts(k.Name).Matched
		}
		return out
	}
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "round\ttook s\tcompacted in\tdeferred\tabandoned\texpired\tleft\tdeleted\torphans\tpending\trequests\t\n")
	fmt.Fprintf(os.Stderr, "backlog: %d rounds of %s, %s a request\n", o.rounds, o.budget, o.delay)
	var byKind [][]int
	for round := 1; round <= o.rounds; round++ {
		before := counts()
		mr, err := tbl.Maintain(ctx, lake.MaintainOptions{Budget: o.budget})
		after := counts()
		delta := make([]int, len(after))
		total := 0
		for i := range after {
			delta[i] = after[i] - before[i]
			total += delta[i]
		}
		byKind = append(byKind, delta)
		in := 0
		for _, g := range mr.Compacted.Groups {
			in += g.FilesIn
		}
		orphans := 0
		if mr.Orphans != nil {
			orphans = len(mr.Orphans.Files)
		}
		errText := ""
		if err != nil {
			errText = " error: " + err.Error()
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t%s\n", round, mr.Took.Seconds(), in, mr.Compacted.Deferred,
			mr.Compacted.Abandoned, len(mr.Expired.Expired), mr.Expired.Left, mr.Expired.FilesDeleted, orphans, mr.Pending, total, errText)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	kw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(kw, "requests by kind\t")
	for round := range byKind {
		fmt.Fprintf(kw, "r%d\t", round+1)
	}
	fmt.Fprintln(kw)
	for i, k := range requestKinds {
		fmt.Fprintf(kw, "%s\t", k.Name)
		for round := range byKind {
			fmt.Fprintf(kw, "%d\t", byKind[round][i])
		}
		fmt.Fprintln(kw)
	}
	if err := kw.Flush(); err != nil {
		return err
	}
	proxy.Clear()
	if err := tbl.Refresh(ctx); err != nil {
		return err
	}
	stray, err := tbl.RemoveOrphans(ctx, lake.OrphanOptions{MinAge: time.Second, DryRun: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nafter %d rounds: %d snapshots, %d files nothing references\n", o.rounds, len(tbl.Metadata().Snapshots()), len(stray.Files))
	return nil
}
