package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/storage"
)

// The latency cases: latency-R sends small files (100 rows, ~7 KB, as c1)
// at R files per second, each followed by its object notification, and
// measures the time from the notification to the commit of its file.
//
//	serve: `timelake serve` (in this process, its defaults, no sweep);
//	cron:  `timelake ingest` from cron every minute: a file waits for the
//	       next run (uniform over the minute: 60*(i+0.5)/n seconds for the
//	       i-th of n files) plus the time the run takes to commit it,
//	       measured by one ingest run over the same files.
var latencyFiles = map[float64]int{1: 60, 20: 600, 200: 2000}

func init() {
	extraModes["serve"] = func(ctx context.Context, c *s3.Client, s Setup, _ string, r *Result) error {
		return latencyServe(ctx, c, s, r)
	}
	extraModes["cron"] = func(ctx context.Context, c *s3.Client, s Setup, _ string, r *Result) error {
		return latencyCron(ctx, c, s, r)
	}
}

// latencyRate reads R from the case name latency-R.
func latencyRate(name string) (float64, int, error) {
	rate, err := strconv.ParseFloat(strings.TrimPrefix(name, "latency-"), 64)
	if err != nil || latencyFiles[rate] == 0 {
		return 0, 0, fmt.Errorf("case %q: want latency-1, latency-20 or latency-200", name)
	}
	return rate, latencyFiles[rate], nil
}

func latencyKey(i int) string { return fmt.Sprintf("gateway-%02d/%05d.csv", i%20, i) }

func latencyFile(i int) []byte {
	var b bytes.Buffer
	b.WriteString("time,device_id,site,temperature_c,humidity_pct,battery_v\n")
	t0 := start.Add(time.Duration(i) * 17 * time.Minute)
	for j := range 100 {
		fmt.Fprintf(&b, "%s,dev-%02d-%d,north-field-station,%.1f,%.1f,%.2f\n",
			t0.Add(time.Duration(j/10)*10*time.Second).Format(time.RFC3339), i%20, j%10,
			float64((i*7+j)%400)/10-5, float64((i+j*3)%1000)/10, 3+float64((i+j)%120)/100)
	}
	return b.Bytes()
}

// commitTimes records when each key was committed.
type commitTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (ct *commitTimes) record(keys []string, _ time.Duration, err error) {
	if err != nil {
		return
	}
	now := time.Now()
	ct.mu.Lock()
	defer ct.mu.Unlock()
	for _, k := range keys {
		if _, ok := ct.at[k]; !ok {
			ct.at[k] = now
		}
	}
}

func (ct *commitTimes) len() int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return len(ct.at)
}

func benchIngestConfig(ctx context.Context, c *s3.Client, s Setup) (ingest.Config, error) {
	l, err := lake.Open(ctx, "s3://"+s.Lake+"/warehouse", lake.Options{S3: c})
	if err != nil {
		return ingest.Config{}, err
	}
	// The command's defaults: content dedupe and maintenance after loading.
	return ingest.Config{Landing: storage.NewS3Store(c, s.Landing, "", storage.S3StoreOptions{}), Lake: l,
		Table: lake.TableName{Namespace: "bench", Name: "readings"}, SeriesKey: []string{"device_id"},
		ContentDedupe: true, MaintenanceBudget: ingest.DefaultMaintenanceBudget,
		Logger: slog.New(slog.DiscardHandler)}, nil
}

// latencyServe runs a server and sends the case's files at its rate.
func latencyServe(ctx context.Context, c *s3.Client, s Setup, r *Result) error {
	rate, n, err := latencyRate(r.Case)
	if err != nil {
		return err
	}
	cfg, err := benchIngestConfig(ctx, c, s)
	if err != nil {
		return err
	}
	ct := &commitTimes{at: map[string]time.Time{}}
	cfg.OnCommit = ct.record
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv, err := serve.New(serve.Config{Ingest: cfg, Listener: ln, Sweep: time.Hour, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Run(sctx) }()
	defer func() { stop(); <-served }()
	url := "http://" + ln.Addr().String()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("serve did not become healthy")
		}
	}

	// Each file lands (PUT) at its time, then its notification is sent.
	var mu sync.Mutex
	sent := map[string]time.Time{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(64)
	t0 := time.Now()
	for i := range n {
		time.Sleep(time.Until(t0.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
		g.Go(func() error {
			key := latencyKey(i)
			if _, err := c.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(s.Landing), Key: aws.String(key),
				Body: bytes.NewReader(latencyFile(i))}); err != nil {
				return err
			}
			body := `{"events":[{"eventVersion":"1","eventSource":"tigris","eventName":"OBJECT_CREATED_PUT","bucket":"` +
				s.Landing + `","object":{"key":"` + key + `"}}]}`
			mu.Lock()
			sent[key] = time.Now()
			mu.Unlock()
			resp, err := http.Post(url+"/notify", "application/json", strings.NewReader(body))
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("notify %s: %s", key, resp.Status)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Minute); ct.len() < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d files committed after 10 minutes", ct.len(), n)
		}
	}
	lat := make([]float64, 0, n)
	for k, at := range ct.at {
		lat = append(lat, at.Sub(sent[k]).Seconds())
	}
	setLatency(r, lat, rate, n)
	return nil
}

// latencyCron puts the case's files, runs one ingest over them, and adds to
// each file's commit time within the run its wait for the next minute.
func latencyCron(ctx context.Context, c *s3.Client, s Setup, r *Result) error {
	rate, n, err := latencyRate(r.Case)
	if err != nil {
		return err
	}
	cfg, err := benchIngestConfig(ctx, c, s)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			_, err := c.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(s.Landing), Key: aws.String(latencyKey(i)),
				Body: bytes.NewReader(latencyFile(i))})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	ct := &commitTimes{at: map[string]time.Time{}}
	cfg.OnCommit = ct.record
	runStart := time.Now()
	rep, err := ingest.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if rep.Loaded != n {
		return fmt.Errorf("cron: loaded %d of %d files", rep.Loaded, n)
	}
	lat := make([]float64, 0, n)
	for i := range n {
		wait := 60 * (float64(i) + 0.5) / float64(n)
		lat = append(lat, wait+ct.at[latencyKey(i)].Sub(runStart).Seconds())
	}
	setLatency(r, lat, rate, n)
	return nil
}

func setLatency(r *Result, lat []float64, rate float64, n int) {
	slices.Sort(lat)
	q := func(p float64) float64 { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	r.Files, r.Rate = n, rate
	r.LatencyP50, r.LatencyP99, r.LatencyMax = q(0.50), q(0.99), lat[len(lat)-1]
}
