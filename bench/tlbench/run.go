package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
)

// countingClient counts the HTTP requests the S3 client sends, over the
// HTTP client timelake uses (storage.NewHTTPClient), for every mode.
type countingClient struct {
	inner aws.HTTPClient
	n     atomic.Int64
}

func newCountingClient() *countingClient {
	return &countingClient{inner: storage.NewHTTPClient()}
}

func (c *countingClient) Do(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.inner.Do(r)
}

func s3Client(ctx context.Context, hc aws.HTTPClient) (*s3.Client, error) {
	ep := os.Getenv("TIMELAKE_TEST_S3_ENDPOINT")
	if ep == "" {
		return nil, errors.New("TIMELAKE_TEST_S3_ENDPOINT is not set: start the server with scripts/s3-server.sh")
	}
	return s3ClientAt(ctx, ep, hc)
}

// s3ClientAt is s3Client with another endpoint (a fault proxy in front of
// the server), the same region and keys.
func s3ClientAt(ctx context.Context, ep string, hc aws.HTTPClient) (*s3.Client, error) {
	region := os.Getenv("TIMELAKE_TEST_S3_REGION")
	if region == "" {
		region = "us-east-1"
	}
	return storage.NewSDKClient(ctx, storage.S3Config{Endpoint: ep, Region: region,
		AccessKeyID: os.Getenv("TIMELAKE_TEST_S3_ACCESS_KEY"), SecretAccessKey: os.Getenv("TIMELAKE_TEST_S3_SECRET_KEY"),
		HTTPClient: hc})
}

// Setup names the buckets of one measured run.
type Setup struct {
	Landing string `json:"landing"` // holds the case's files
	Lake    string `json:"lake"`    // empty warehouse bucket
	Copy    string `json:"copy"`    // empty bucket for the raw copy and uploads
	Files   int    `json:"files"`
	Bytes   int64  `json:"bytes"`
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// localFiles lists the generated files as landing keys.
func localFiles(dir string) (map[string]string, []string, error) {
	paths := map[string]string{}
	var keys []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		k := filepath.ToSlash(rel)
		paths[k] = p
		keys = append(keys, k)
		return nil
	})
	return paths, keys, err
}

// setup creates the buckets and uploads the case's files (not measured).
func setup(ctx context.Context, data string, w io.Writer) error {
	c, err := s3Client(ctx, nil)
	if err != nil {
		return err
	}
	s := Setup{Landing: randomName("bench-landing"), Lake: randomName("bench-lake"), Copy: randomName("bench-copy")}
	for _, b := range []string{s.Landing, s.Lake, s.Copy} {
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
			return err
		}
	}
	if data != "" {
		paths, keys, err := localFiles(data)
		if err != nil {
			return err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		var total atomic.Int64
		for _, k := range keys {
			g.Go(func() error {
				f, err := os.Open(paths[k])
				if err != nil {
					return err
				}
				defer f.Close()
				fi, _ := f.Stat()
				total.Add(fi.Size())
				_, err = c.PutObject(gctx, &s3.PutObjectInput{Bucket: aws.String(s.Landing), Key: aws.String(k), Body: f})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		s.Files, s.Bytes = len(keys), total.Load()
	}
	return json.NewEncoder(w).Encode(s)
}

func readSetup(p string) (Setup, error) {
	var s Setup
	b, err := os.ReadFile(p)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// peakRSS is the process's high-water resident set size (Linux VmHWM).
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

func runCase(ctx context.Context, name, mode, setupFile, data string, w io.Writer) error {
	s, err := readSetup(setupFile)
	if err != nil {
		return err
	}
	hc := newCountingClient()
	c, err := s3Client(ctx, hc)
	if err != nil {
		return err
	}
	r := Result{Case: name, Mode: mode, Files: s.Files, Bytes: s.Bytes}
	if mode == "upload" {
		// The spool is consumed: fill a fresh one before the timer starts.
		spool, err := os.MkdirTemp("", "tlbench-spool")
		if err != nil {
			return err
		}
		defer os.RemoveAll(spool)
		if err := copyTree(data, spool); err != nil {
			return err
		}
		data = spool
	}
	var puts []dataFileBody
	if mode == "dataputs" {
		// Not measured: the data files an ingest of the case writes.
		if puts, err = ingestedDataFiles(ctx, c, s, name); err != nil {
			return err
		}
	}
	requestsBefore := hc.n.Load()
	cpu0, server0 := processCPU(), serverCPU()
	start := time.Now()
	// stop ends the timed part: its seconds and CPU seconds.
	stop := func() {
		r.Seconds = time.Since(start).Seconds()
		r.CPUSeconds = processCPU() - cpu0
		if server0 >= 0 {
			r.ServerCPUSeconds = math.Round((serverCPU()-server0)*100) / 100 // ticks of 10 ms
		}
	}
	switch mode {
	case "ingest", "sequential", "ingest-wide":
		rep, l, err := runIngest(ctx, c, s, mode)
		if err != nil {
			return err
		}
		stop()
		if err := checkLoaded(mode, name, s, rep); err != nil {
			return err
		}
		r.Rows = rep.Rows
		r.Requests = hc.n.Load()
		if err := tableFacts(ctx, c, s, l, &r); err != nil {
			return err
		}
	case "dataputs":
		if err := putDataFiles(ctx, c, s, puts); err != nil {
			return err
		}
		stop()
		r.Requests, r.DataFiles = hc.n.Load()-requestsBefore, len(puts)
	case "rawcopy":
		// The I/O floor: GET every landing object and PUT its bytes to
		// another bucket, with ingest's default concurrency.
		var keys []string
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(s.Landing)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			for _, o := range page.Contents {
				keys = append(keys, aws.ToString(o.Key))
			}
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(ingest.DefaultParallel)
		for _, k := range keys {
			g.Go(func() error { return copyObject(gctx, c, s, k) })
		}
		if err := g.Wait(); err != nil {
			return err
		}
		stop()
		r.Requests = hc.n.Load()
	default:
		if fn, ok := extraModes[mode]; ok {
			if err := fn(ctx, c, s, data, &r); err != nil {
				return err
			}
			stop()
			r.Requests += hc.n.Load() // a mode may count requests of its own
			break
		}
		return fmt.Errorf("unknown mode %q", mode)
	}
	r.PeakRSS = peakRSS()
	return json.NewEncoder(w).Encode(r)
}

// processCPU is this process's CPU seconds so far, user and system.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// serverCPU is the CPU seconds so far of the S3 server's process, which
// bench/run.sh names in TLBENCH_S3_SERVER_PID (Linux /proc; USER_HZ 100);
// -1 when not known.
func serverCPU() float64 {
	b, err := os.ReadFile("/proc/" + os.Getenv("TLBENCH_S3_SERVER_PID") + "/stat")
	if os.Getenv("TLBENCH_S3_SERVER_PID") == "" || err != nil {
		return -1
	}
	// Fields after the command's closing parenthesis: state is field 3,
	// utime and stime fields 14 and 15.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return -1
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return float64(u+st) / 100
}

// extraModes are measured modes defined in other files (uploads).
var extraModes = map[string]func(ctx context.Context, c *s3.Client, s Setup, data string, r *Result) error{}

// copyObject streams one object to the copy bucket through a temp file,
// as ingest downloads before it decodes.
func copyObject(ctx context.Context, c *s3.Client, s Setup, key string) error {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Landing), Key: aws.String(key)})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp("", "tlbench-copy-*")
	if err != nil {
		out.Body.Close()
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	_, err = io.Copy(f, out.Body)
	out.Body.Close()
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.Copy), Key: aws.String(key), Body: f})
	return err
}

// runIngest runs ingest on the case's landing bucket as `timelake ingest`
// does: mode sequential one file a commit, ingest-wide with a memory budget
// of 160 MiB.
func runIngest(ctx context.Context, c *s3.Client, s Setup, mode string) (*ingest.Report, *lake.Lake, error) {
	l, err := lake.Open(ctx, "s3://"+s.Lake+"/warehouse", lake.Options{S3: c})
	if err != nil {
		return nil, nil, err
	}
	cfg := ingest.Config{
		Landing: storage.NewS3Store(c, s.Landing, "", storage.S3StoreOptions{}),
		Lake:    l, Table: lake.TableName{Namespace: "bench", Name: "readings"}, SeriesKey: []string{"device_id"},
		WorkDir: os.TempDir(),
	}
	switch mode {
	case "sequential":
		cfg.Parallel, cfg.FilesPerCommit = 1, 1
	case "ingest-wide":
		// --memory-budget 160MiB: several large files decoded at once.
		cfg.MemoryBudget = 160 << 20
	}
	// As `timelake ingest` does (GOMEMLIMIT in the environment
	// override it).
	restore := ingest.TuneRuntime(cfg.MemoryBudget, os.LookupEnv)
	rep, err := ingest.Run(ctx, cfg)
	restore()
	return rep, l, err
}

// checkLoaded refuses an ingest run (of mode) that did not load every
// file of the case but its poison file, which it must quarantine.
func checkLoaded(mode, name string, s Setup, rep *ingest.Report) error {
	poisoned := 0
	if cases[name].poison != "" {
		poisoned = 1
	}
	if rep.Loaded != s.Files-poisoned || rep.Quarantined != poisoned {
		return fmt.Errorf("%s: loaded %d of %d files (%d quarantined)", mode, rep.Loaded, s.Files, rep.Quarantined)
	}
	return nil
}

// dataFileBody is one data file an ingest wrote: its key and bytes.
type dataFileBody struct {
	key  string
	body []byte
}

// dataPutsAtOnce is how many PUTs mode dataputs keeps in flight: as many
// as ingest can have, its 4 files at a time each with up to 8 writers
// (ingest.DefaultParallel, datafile.WritePlan).
const dataPutsAtOnce = 32

// ingestedDataFiles ingests the case (as mode ingest) and reads back the
// data files of the table's current snapshot, for mode dataputs.
func ingestedDataFiles(ctx context.Context, c *s3.Client, s Setup, name string) ([]dataFileBody, error) {
	rep, l, err := runIngest(ctx, c, s, "ingest")
	if err != nil {
		return nil, err
	}
	if err := checkLoaded("dataputs", name, s, rep); err != nil {
		return nil, err
	}
	tbl, err := l.LoadTable(ctx, lake.TableName{Namespace: "bench", Name: "readings"})
	if err != nil {
		return nil, err
	}
	tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, errors.New("dataputs: the ingest wrote no data file")
	}
	prefix := "s3://" + s.Lake + "/"
	files := make([]dataFileBody, len(tasks))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(dataPutsAtOnce)
	for i, t := range tasks {
		key, ok := strings.CutPrefix(t.File.FilePath(), prefix)
		if !ok {
			return nil, fmt.Errorf("dataputs: data file %s is not in bucket %s", t.File.FilePath(), s.Lake)
		}
		g.Go(func() error {
			out, err := c.GetObject(gctx, &s3.GetObjectInput{Bucket: aws.String(s.Lake), Key: aws.String(key)})
			if err != nil {
				return err
			}
			defer out.Body.Close()
			b, err := io.ReadAll(out.Body)
			files[i] = dataFileBody{key: key, body: b}
			return err
		})
	}
	return files, g.Wait()
}

// putDataFiles is mode dataputs, the floor of a case's output: the data
// files of an ingest of the case stored again, under the same keys in the
// copy bucket, as ingest stores them (lake's putFile: the body's SHA-256,
// then storage.Upload with it, which sends it for the server to check),
// dataPutsAtOnce at a time.
func putDataFiles(ctx context.Context, c *s3.Client, s Setup, files []dataFileBody) error {
	st := storage.NewS3Store(c, s.Copy, "", storage.S3StoreOptions{})
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(dataPutsAtOnce)
	for _, f := range files {
		g.Go(func() error {
			sum := sha256.Sum256(f.body)
			_, err := storage.Upload(gctx, st, f.key, bytes.NewReader(f.body), int64(len(f.body)),
				storage.UploadOptions{SHA256: hex.EncodeToString(sum[:]), ContentType: "application/octet-stream"})
			return err
		})
	}
	return g.Wait()
}

// tableFacts records the newest metadata size and the data files per
// partition.
func tableFacts(ctx context.Context, c *s3.Client, s Setup, l *lake.Lake, r *Result) error {
	tbl, err := l.LoadTable(ctx, lake.TableName{Namespace: "bench", Name: "readings"})
	if err != nil {
		return err
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Lake),
		Key: aws.String(fmt.Sprintf("warehouse/bench/readings/metadata/v%d.metadata.json", tbl.Version()))})
	if err != nil {
		return err
	}
	r.MetadataBytes = aws.ToInt64(head.ContentLength)
	tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
	if err != nil {
		return err
	}
	parts := map[string]bool{}
	for _, t := range tasks {
		parts[fmt.Sprint(t.File.Partition())] = true
	}
	r.DataFiles, r.Partitions = len(tasks), len(parts)
	if len(parts) > 0 {
		r.FilesPerPartition = float64(len(tasks)) / float64(len(parts))
	}
	return nil
}

// cleanup empties and deletes the buckets of a setup.
func cleanup(ctx context.Context, setupFile string) error {
	s, err := readSetup(setupFile)
	if err != nil {
		return err
	}
	c, err := s3Client(ctx, nil)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var errs []error
	for _, b := range []string{s.Landing, s.Lake, s.Copy} {
		if b == "" {
			continue // a setup without that bucket (fleet)
		}
		p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(16)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return err
			}
			for _, o := range page.Contents {
				g.Go(func() error {
					_, err := c.DeleteObject(gctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: o.Key})
					return err
				})
			}
		}
		if err := g.Wait(); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
