package upload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// forEachStore runs fn on a landing folder and on a bucket of the test S3
// server (skipped, or failed with TIMELAKE_TEST_S3_REQUIRED=1, without one).
func forEachStore(t *testing.T, fn func(t *testing.T, s storage.Store)) {
	t.Run("local", func(t *testing.T) {
		s, err := storage.NewLocalStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fn(t, s)
	})
	t.Run("s3", func(t *testing.T) {
		fn(t, s3Store(t))
	})
}

func s3Store(t *testing.T) *storage.S3Store {
	srv := s3test.FromEnv(t)
	return storage.NewS3Store(srv.Client(t), srv.NewBucket(t), "landing", storage.S3StoreOptions{})
}

// writeFile writes a file with a modification time.
func writeFile(t *testing.T, path, content string, mtime time.Time) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return path
}

func keys(t *testing.T, s storage.Store) []string {
	t.Helper()
	var out []string
	if err := s.List(t.Context(), "", func(o storage.ObjectInfo) error {
		out = append(out, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func object(t *testing.T, s storage.Store, key string) []byte {
	t.Helper()
	b, _, err := storage.ReadAll(t.Context(), s, key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var t0 = time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)

var keyPattern = regexp.MustCompile(`^gateway-7/20260105T100000Z-[0-9a-f]{8}\.csv$`)

func TestSameFileTwice(t *testing.T) {
	forEachStore(t, func(t *testing.T, s storage.Store) {
		path := writeFile(t, filepath.Join(t.TempDir(), "readings.csv"), csvRows(3), t0)
		cfg := Config{Store: s, Files: []string{path}, Gateway: "gateway-7", Validate: true}
		var statuses []Status
		for i := 0; i < 2; i++ {
			rep, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatalf("run %d: %v", i+1, err)
			}
			statuses = append(statuses, rep.Files[0].Status)
		}
		if statuses[0] != Uploaded || statuses[1] != AlreadyUploaded {
			t.Fatalf("statuses = %v, want uploaded then already-uploaded", statuses)
		}
		ks := keys(t, s)
		if len(ks) != 1 || !keyPattern.MatchString(ks[0]) {
			t.Fatalf("objects = %v, want one key like %s", ks, keyPattern)
		}
		if got := object(t, s, ks[0]); string(got) != csvRows(3) {
			t.Fatalf("object content %q", got)
		}
	})
}

func TestExistingKeyWithDifferentContentRefused(t *testing.T) {
	forEachStore(t, func(t *testing.T, s storage.Store) {
		dir := t.TempDir()
		first := writeFile(t, filepath.Join(dir, "a.csv"), csvRows(2), t0)
		second := writeFile(t, filepath.Join(dir, "b.csv"), csvRows(3), t0)
		const key = "gateway-7/20260105T1000.csv"
		if _, err := Run(t.Context(), Config{Store: s, Files: []string{first}, Key: key, Validate: true}); err != nil {
			t.Fatal(err)
		}
		rep, err := Run(t.Context(), Config{Store: s, Files: []string{second}, Key: key, Validate: true})
		if !errors.Is(err, ErrKeyConflict) || !IsFileError(err) {
			t.Fatalf("err = %v, want ErrKeyConflict", err)
		}
		if !strings.Contains(err.Error(), "corrections must be uploaded as new files") {
			t.Errorf("message %q does not say what to do", err)
		}
		if rep.Failed != 1 || rep.Files[0].Status != Failed {
			t.Errorf("report = %+v", rep)
		}
		if got := object(t, s, key); string(got) != csvRows(2) {
			t.Fatalf("object changed: %q", got)
		}
	})
}

// TestObjectsWithoutMetadata covers keys written by other S3 clients (and
// folders): the comparison falls back to size and SHA-256 of the bytes.
func TestObjectsWithoutMetadata(t *testing.T) {
	forEachStore(t, func(t *testing.T, s storage.Store) {
		dir := t.TempDir()
		path := writeFile(t, filepath.Join(dir, "a.csv"), csvRows(2), t0)
		put := func(key, content string) {
			if _, err := s.Put(t.Context(), key, strings.NewReader(content), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		tests := []struct {
			name, existing string
			wantErr        error
		}{
			{name: "same bytes", existing: csvRows(2)},
			{name: "same size other bytes", existing: strings.Replace(csvRows(2), "s1", "s2", 1), wantErr: ErrKeyConflict},
			{name: "other size", existing: csvRows(5), wantErr: ErrKeyConflict},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				key := fmt.Sprintf("other/%d.csv", i)
				put(key, tt.existing)
				rep, err := Run(t.Context(), Config{Store: s, Files: []string{path}, Key: key})
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if tt.wantErr == nil && rep.Files[0].Status != AlreadyUploaded {
					t.Fatalf("status = %s", rep.Files[0].Status)
				}
				if got := object(t, s, key); string(got) != tt.existing {
					t.Fatal("object changed")
				}
			})
		}
	})
}

func TestGzip(t *testing.T) {
	forEachStore(t, func(t *testing.T, s storage.Store) {
		path := writeFile(t, filepath.Join(t.TempDir(), "readings.csv"), csvRows(50), t0)
		cfg := Config{Store: s, Files: []string{path}, Gateway: "gateway-7", Gzip: true, Validate: true}
		rep, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Files[0]
		if !res.Gzipped || !strings.HasSuffix(res.Key, ".csv.gz") || res.SHA256 == res.SourceSHA256 {
			t.Fatalf("result = %+v", res)
		}
		plain, err := Run(t.Context(), Config{Store: s, Files: []string{path}, Gateway: "gateway-7"})
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimSuffix(res.Key, ".gz"); plain.Files[0].Key != want {
			t.Errorf("key without --gzip = %s, want %s (same hash: of the file before compression)", plain.Files[0].Key, want)
		}
		zr, err := gzip.NewReader(bytes.NewReader(object(t, s, res.Key)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || string(got) != csvRows(50) {
			t.Fatalf("object does not decompress to the file (%v)", err)
		}
		if _, meta, err := storage.StatMetadata(t.Context(), s, res.Key); err != nil {
			t.Fatal(err)
		} else if _, isS3 := s.(*storage.S3Store); isS3 && (meta[MetaSourceSHA256] != res.SourceSHA256 || meta[storage.MetaSHA256] != res.SHA256) {
			t.Errorf("metadata = %v", meta)
		}
		again, err := Run(t.Context(), cfg)
		if err != nil || again.Files[0].Status != AlreadyUploaded {
			t.Fatalf("second gzip upload: %v, %+v", err, again.Files)
		}
		_, err = Run(t.Context(), Config{Store: s, Files: []string{path}, Key: "x/readings.csv", Gzip: true})
		if err == nil || !strings.Contains(err.Error(), "must end in .gz") {
			t.Fatalf("--key without .gz and --gzip: err = %v", err)
		}
	})
}

// TestSpoolCrashAndRerun simulates a crash after the upload of file 2 of 5,
// before that file is deleted: the rerun finds it already uploaded, uploads
// the rest, and leaves five objects and an empty spool.
func TestSpoolCrashAndRerun(t *testing.T) {
	forEachStore(t, func(t *testing.T, s storage.Store) {
		spool := t.TempDir()
		var want []string
		for i := 5; i >= 1; i-- { // names in the opposite order of times
			name := fmt.Sprintf("f%d.csv", 6-i)
			writeFile(t, filepath.Join(spool, name), csvRows(i), t0.Add(time.Duration(i)*time.Minute))
			want = append(want, filepath.Join(spool, name))
		}
		// Oldest first: f5 (1 min) ... f1 (5 min).
		for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
			want[i], want[j] = want[j], want[i]
		}
		crash := errors.New("simulated crash")
		n := 0
		var order []string
		// One at a time, so "the crash after file 2" is exact; the parallel
		// case is TestSpoolCrashAndRerunParallel.
		cfg := Config{Store: s, Spool: spool, Gateway: "gateway-7", Validate: true, Parallel: 1,
			OnFile: func(r FileResult) { order = append(order, r.File) },
			AfterUpload: func(FileResult) error {
				if n++; n == 2 {
					return crash
				}
				return nil
			}}
		rep, err := Run(t.Context(), cfg)
		if !errors.Is(err, crash) || !rep.Stopped {
			t.Fatalf("first run: err = %v, stopped %v", err, rep.Stopped)
		}
		if left, _ := SpoolFiles(spool, time.Now()); len(left) != 4 || left[0] != want[1] {
			t.Fatalf("spool after the crash = %v, want %v", left, want[1:])
		}
		cfg.AfterUpload = nil
		rep, err = Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.AlreadyUploaded != 1 || rep.Uploaded != 3 || rep.Files[0].File != want[1] || rep.Files[0].Status != AlreadyUploaded {
			t.Fatalf("rerun report = %+v", rep)
		}
		if got := strings.Join(order, " "); got != strings.Join(append(want[:2:2], want[1:]...), " ") {
			t.Errorf("order = %s", got)
		}
		if ks := keys(t, s); len(ks) != 5 {
			t.Fatalf("objects = %v, want 5", ks)
		}
		if entries, _ := os.ReadDir(spool); len(entries) != 0 {
			t.Fatalf("spool not empty: %v", entries)
		}
	})
}

// TestSpoolCrashAndRerunParallel: with several uploads in flight, a crash
// after the second confirmed upload and a rerun still leave every file
// uploaded exactly once and the spool empty.
func TestSpoolCrashAndRerunParallel(t *testing.T) {
	forEachStore(t, func(t *testing.T, s storage.Store) {
		spool := t.TempDir()
		for i := range 12 {
			writeFile(t, filepath.Join(spool, fmt.Sprintf("f%02d.csv", i)), csvRows(i+1), t0.Add(time.Duration(i)*time.Minute))
		}
		crash := errors.New("simulated crash")
		var n atomic.Int32
		cfg := Config{Store: s, Spool: spool, Gateway: "gateway-7", Validate: true, Parallel: 4,
			AfterUpload: func(FileResult) error {
				if n.Add(1) == 2 {
					return crash
				}
				return nil
			}}
		if _, err := Run(t.Context(), cfg); !errors.Is(err, crash) {
			t.Fatalf("first run: err = %v", err)
		}
		cfg.AfterUpload = nil
		rep, err := Run(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed != 0 || rep.Uploaded+rep.AlreadyUploaded == 0 {
			t.Fatalf("rerun report = %+v", rep)
		}
		if ks := keys(t, s); len(ks) != 12 {
			t.Fatalf("objects = %v, want 12", ks)
		}
		if entries, _ := os.ReadDir(spool); len(entries) != 0 {
			t.Fatalf("spool not empty: %v", entries)
		}
	})
}

func TestSpoolFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	writeFile(t, filepath.Join(dir, "b.csv"), "x", now.Add(-2*time.Hour))
	writeFile(t, filepath.Join(dir, "a.csv"), "x", now.Add(-time.Hour))
	writeFile(t, filepath.Join(dir, "c.csv"), "x", now.Add(-time.Hour)) // same time: by name
	writeFile(t, filepath.Join(dir, "fresh.csv"), "x", now)
	for _, skipped := range []string{".hidden.csv", "d.csv.tmp", "e.csv.PART", "f.partial", "g.csv~", ".h.swp"} {
		writeFile(t, filepath.Join(dir, skipped), "x", now.Add(-3*time.Hour))
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "a.csv"), filepath.Join(dir, "link.csv")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		minAge time.Duration
		want   []string
	}{
		{0, []string{"b.csv", "a.csv", "c.csv", "fresh.csv"}},
		{time.Minute, []string{"b.csv", "a.csv", "c.csv"}},
	}
	for _, tt := range tests {
		got, err := SpoolFiles(dir, now.Add(-tt.minAge))
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i] = filepath.Base(got[i])
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("minAge %s: %v, want %v", tt.minAge, got, tt.want)
		}
	}
}

func TestSpoolDoneAndInvalidFiles(t *testing.T) {
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	spool, done := t.TempDir(), filepath.Join(t.TempDir(), "done")
	writeFile(t, filepath.Join(spool, "a.csv"), csvRows(1), t0)
	writeFile(t, filepath.Join(spool, "bad.csv"), "time,v\n2026-01-05T10:00:00Z\n", t0.Add(time.Minute))
	writeFile(t, filepath.Join(spool, "c.csv"), csvRows(2), t0.Add(2*time.Minute))
	writeFile(t, filepath.Join(done, "a.csv"), "an older a.csv", t0) // name taken
	rep, err := Run(t.Context(), Config{Store: s, Spool: spool, Done: done, Gateway: "gw", Validate: true})
	if !errors.Is(err, ErrRejected) || IsFileError(err) {
		t.Fatalf("err = %v, want ErrRejected", err)
	}
	if rep.Uploaded != 2 || rep.Rejected != 1 || rep.Failed != 0 || rep.Stopped {
		t.Fatalf("report = %+v", rep)
	}
	bad := rep.Files[1]
	if bad.Status != Rejected || !strings.Contains(bad.Error, "bad.csv: row 1 (line 2): wrong number of fields") ||
		bad.RejectedTo != filepath.Join(spool, "rejected", "bad.csv") {
		t.Errorf("bad.csv: %+v", bad)
	}
	var report RejectReport
	if b, err := os.ReadFile(bad.RejectedTo + ".error.json"); err != nil || json.Unmarshal(b, &report) != nil ||
		report.Row != 1 || !strings.Contains(report.Reason, "wrong number of fields") || report.File != filepath.Join(spool, "bad.csv") {
		t.Errorf("report %+v, %v", report, err)
	}
	if left, _ := SpoolFiles(spool, time.Now()); len(left) != 0 {
		t.Errorf("spool = %v, want empty: the poison file no longer fails every run", left)
	}
	// The next run has nothing to do and succeeds.
	if rep, err := Run(t.Context(), Config{Store: s, Spool: spool, Done: done, Gateway: "gw", Validate: true}); err != nil || len(rep.Files) != 0 {
		t.Fatalf("next run: %+v, %v", rep, err)
	}
	moved := rep.Files[0].MovedTo
	if !regexp.MustCompile(`/a-[0-9a-f]{8}\.csv$`).MatchString(moved) {
		t.Errorf("a.csv moved to %s, want a-<hash>.csv next to the older a.csv", moved)
	}
	if b, _ := os.ReadFile(filepath.Join(done, "a.csv")); string(b) != "an older a.csv" {
		t.Error("the older done/a.csv was replaced")
	}
	if b, _ := os.ReadFile(moved); string(b) != csvRows(1) {
		t.Error("moved file content differs")
	}
}

func TestTimeNow(t *testing.T) {
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "r.csv"), csvRows(1), t0)
	now := time.Date(2026, 3, 1, 12, 30, 15, 0, time.UTC)
	rep, err := Run(t.Context(), Config{Store: s, Files: []string{path}, Gateway: "g", Prefix: "site-3", Time: TimeNow, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if k := rep.Files[0].Key; !regexp.MustCompile(`^site-3/g/20260301T123015Z-[0-9a-f]{8}\.csv$`).MatchString(k) {
		t.Fatalf("key = %s", k)
	}
}

// TestInvalidFileSendsNothing proves that --validate refuses a broken file
// before any request: the S3 endpoint counts requests.
func TestInvalidFileSendsNothing(t *testing.T) {
	var requests atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer ts.Close()
	client, err := storage.NewS3Client(t.Context(), storage.S3Config{Endpoint: ts.URL, Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := storage.NewS3Store(client, "landing", "", storage.S3StoreOptions{})
	path := writeFile(t, filepath.Join(t.TempDir(), "broken.csv"), csvRows(5)+"2026-01-05T11:00:00Z,s1\n", t0)

	_, err = Run(t.Context(), Config{Store: s, Files: []string{path}, Gateway: "g", Validate: true})
	if err == nil || !strings.Contains(err.Error(), "broken.csv: row 6 (line 7): wrong number of fields: the line has 2, the header has 3") {
		t.Fatalf("err = %v", err)
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests were sent for an invalid file", n)
	}
	// The same file without validation does reach the server.
	if _, err := Run(t.Context(), Config{Store: s, Files: []string{path}, Gateway: "g"}); err == nil {
		t.Fatal("upload to a failing endpoint succeeded")
	}
	if requests.Load() == 0 {
		t.Fatal("the endpoint counted no request: the proof above is void")
	}
}

// writeBigCSV writes a valid CSV of at least size bytes, every line unique.
func writeBigCSV(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, _ := w.WriteString("time,sensor,value\n")
	written := int64(n)
	for i := 0; written < size; i++ {
		n, _ := fmt.Fprintf(w, "%s,sensor-%d,%d\n", t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), i%97, i)
		written += int64(n)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// sameStream compares two readers in 1 MiB chunks.
func sameStream(a, b io.Reader) (bool, error) {
	ba, bb := make([]byte, 1<<20), make([]byte, 1<<20)
	for {
		na, ea := io.ReadFull(a, ba)
		nb, eb := io.ReadFull(b, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		aEnd := errors.Is(ea, io.EOF) || errors.Is(ea, io.ErrUnexpectedEOF)
		bEnd := errors.Is(eb, io.EOF) || errors.Is(eb, io.ErrUnexpectedEOF)
		if aEnd || bEnd {
			return aEnd == bEnd, nil
		}
		if ea != nil {
			return false, ea
		}
		if eb != nil {
			return false, eb
		}
	}
}

func TestMultipart64MiB(t *testing.T) {
	s := s3Store(t)
	path := filepath.Join(t.TempDir(), "big.csv")
	writeBigCSV(t, path, 64<<20)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var lastProgress atomic.Int64
	cfg := Config{Store: s, Files: []string{path}, Gateway: "gateway-7", Validate: true,
		Progress: func(string, int64) (func(int64), func()) {
			return func(n int64) { lastProgress.Store(n) }, nil
		}}
	rep, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Files[0]
	wantParts := int((fi.Size() + storage.DefaultPartSize - 1) / storage.DefaultPartSize)
	if !res.Multipart || res.Parts != wantParts {
		t.Fatalf("multipart %v with %d parts, want %d parts", res.Multipart, res.Parts, wantParts)
	}
	if lastProgress.Load() != fi.Size() {
		t.Errorf("progress ended at %d of %d bytes", lastProgress.Load(), fi.Size())
	}
	rc, info, err := s.Get(t.Context(), res.Key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if same, err := sameStream(rc, f); err != nil || !same || info.Size != fi.Size() {
		t.Fatalf("object (%d bytes) differs from the file (%d bytes): %v", info.Size, fi.Size(), err)
	}
	// A retry of a large file costs one HEAD, not a resend.
	again, err := Run(t.Context(), cfg)
	if err != nil || again.Files[0].Status != AlreadyUploaded {
		t.Fatalf("second upload: %v %+v", err, again.Files)
	}
}

// TestUploadThenIngest uploads a spool to the S3 landing bucket and ingests
// it into a local warehouse: every row lands in the table.
func TestUploadThenIngest(t *testing.T) {
	s := s3Store(t)
	spool := t.TempDir()
	writeFile(t, filepath.Join(spool, "a.csv"), csvRows(3), t0)
	writeFile(t, filepath.Join(spool, "b.csv"), csvRows(4), t0.Add(time.Minute))
	writeFile(t, filepath.Join(spool, "c.csv"), csvRows(5), t0.Add(2*time.Minute))
	up, err := Run(t.Context(), Config{Store: s, Spool: spool, Gateway: "gateway-7", Validate: true, Gzip: true})
	if err != nil || up.Uploaded != 3 {
		t.Fatalf("upload: %v, %+v", err, up)
	}

	ctx := context.Background()
	lk, err := lake.Open(ctx, t.TempDir(), lake.Options{})
	if err != nil {
		t.Fatal(err)
	}
	name, err := lake.ParseTableName("iot.readings")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ingest.Run(ctx, ingest.Config{Landing: s, Lake: lk, Table: name, Partition: lake.Day})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != 3 || rep.Rows != 12 || rep.Quarantined != 0 {
		t.Fatalf("ingest report: %+v", rep)
	}
	tbl, err := lk.LoadTable(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range up.Files {
		if _, ok := tbl.FindBatch(f.Key); !ok {
			t.Errorf("batch %s not in the table", f.Key)
		}
	}
	if ks := keys(t, s); len(ks) != 0 {
		t.Errorf("landing not empty after ingest: %v", ks)
	}
}

// TestExistingKeyWithoutReadPermission: write-only credentials get 412 on
// the put and 403 on the HEAD that would compare; the message says why.
func TestExistingKeyWithoutReadPermission(t *testing.T) {
	var methods []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods = append(methods, r.Method)
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.Method {
		case http.MethodPut:
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = io.WriteString(w, `<Error><Code>PreconditionFailed</Code><Message>x</Message></Error>`)
		default:
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer ts.Close()
	client, err := storage.NewS3Client(t.Context(), storage.S3Config{Endpoint: ts.URL, Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	s := storage.NewS3Store(client, "landing", "", storage.S3StoreOptions{})
	path := writeFile(t, filepath.Join(t.TempDir(), "r.csv"), csvRows(2), t0)
	_, err = Run(t.Context(), Config{Store: s, Files: []string{path}, Gateway: "g"})
	if err == nil || !IsFileError(err) || !strings.Contains(err.Error(), "lack s3:GetObject") {
		t.Fatalf("err = %v", err)
	}
	if got := strings.Join(methods, ","); got != "PUT,HEAD" {
		t.Errorf("requests %s, want PUT,HEAD (no retry of 4xx)", got)
	}
}

// TestSpoolOverlappingRuns: a file that disappears from the spool after the
// listing (an overlapping run took it) is skipped, not a failure.
func TestSpoolOverlappingRuns(t *testing.T) {
	for _, done := range []string{"", "done"} {
		t.Run("done="+done, func(t *testing.T) {
			s, err := storage.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			spool := t.TempDir()
			a := writeFile(t, filepath.Join(spool, "a.csv"), csvRows(1), t0)
			b := writeFile(t, filepath.Join(spool, "b.csv"), csvRows(2), t0.Add(time.Minute))
			// One file at a time: the scenario is "b vanished while a was
			// being uploaded".
			cfg := Config{Store: s, Spool: spool, Gateway: "gw", Validate: true, Parallel: 1}
			if done != "" {
				cfg.Done = filepath.Join(t.TempDir(), done)
			}
			cfg.AfterUpload = func(r FileResult) error {
				if r.File == a {
					return os.Remove(b) // the other run took b
				}
				// The other run moved or deleted this file meanwhile.
				return os.Remove(r.File)
			}
			rep, err := Run(t.Context(), cfg)
			if err != nil || rep.Uploaded != 1 || len(rep.Files) != 1 {
				t.Fatalf("err %v, report %+v", err, rep)
			}
			writeFile(t, b, csvRows(2), t0.Add(time.Minute))
			cfg.AfterUpload = func(r FileResult) error { return os.Remove(r.File) }
			rep, err = Run(t.Context(), cfg)
			if err != nil || rep.Uploaded != 1 {
				t.Fatalf("err %v, report %+v", err, rep)
			}
		})
	}
}

// TestFilesInMemoryAndStreamed covers both ways a file is prepared: up to
// snapshotMax bytes it is read once into memory (validated, hashed and
// gzipped from that copy), larger files are read from disk for each step.
// Both give the key of the file's SHA-256, the same object, and the same
// errors.
func TestFilesInMemoryAndStreamed(t *testing.T) {
	dir := t.TempDir()
	small := writeFile(t, filepath.Join(dir, "small.csv"), csvRows(50), t0)
	at := filepath.Join(dir, "at-limit.csv")
	writeBigCSV(t, at, snapshotMax-200)
	fillTo(t, at, snapshotMax)
	large := filepath.Join(dir, "large.csv")
	writeBigCSV(t, large, snapshotMax+1)
	raggedSmall := writeFile(t, filepath.Join(dir, "ragged-small.csv"), csvRows(5)+"x\n", t0)
	raggedLarge := filepath.Join(dir, "ragged-large.csv")
	writeBigCSV(t, raggedLarge, snapshotMax+1)
	appendTo(t, raggedLarge, "x\n")
	folder := filepath.Join(dir, "folder.csv")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.csv")

	tests := []struct {
		name     string
		path     string
		validate bool
		gzip     bool
		wantErr  string // substring; "" means uploaded
		notExist bool   // the error wraps fs.ErrNotExist
	}{
		{name: "small", path: small, validate: true},
		{name: "small without validation", path: small},
		{name: "small gzipped", path: small, validate: true, gzip: true},
		{name: "at the limit", path: at, validate: true},
		{name: "large", path: large, validate: true},
		{name: "large gzipped", path: large, validate: true, gzip: true},
		{name: "ragged small", path: raggedSmall, validate: true, wantErr: "ragged-small.csv: row 6 (line 7): wrong number of fields: the line has 1, the header has 3"},
		{name: "ragged large", path: raggedLarge, validate: true, wantErr: "ragged-large.csv: row"},
		{name: "folder", path: folder, validate: true, wantErr: "not a regular file (use --spool for a folder)"},
		{name: "folder without validation", path: folder, wantErr: "not a regular file (use --spool for a folder)"},
		{name: "missing", path: missing, validate: true, wantErr: "missing.csv: cannot read file", notExist: true},
		{name: "missing without validation", path: missing, wantErr: "no such file", notExist: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := storage.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(t.Context(), Config{Store: s, Files: []string{tt.path}, Gateway: "g", Validate: tt.validate, Gzip: tt.gzip, TempDir: t.TempDir()})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !IsFileError(err) {
					t.Fatalf("err = %v, want a file error with %q", err, tt.wantErr)
				}
				if errors.Is(err, fs.ErrNotExist) != tt.notExist {
					t.Fatalf("err = %v: wraps fs.ErrNotExist = %v, want %v", err, !tt.notExist, tt.notExist)
				}
				if ks := keys(t, s); len(ks) != 0 {
					t.Fatalf("objects %v after a failure", ks)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			data, err := os.ReadFile(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			res := rep.Files[0]
			if res.SourceSHA256 != hex.EncodeToString(sum[:]) || !strings.Contains(res.Key, "-"+res.SourceSHA256[:HashChars]+".csv") {
				t.Fatalf("key %s, source SHA-256 %s; want the file's %x", res.Key, res.SourceSHA256, sum)
			}
			got := object(t, s, res.Key)
			if tt.gzip {
				zr, err := gzip.NewReader(bytes.NewReader(got))
				if err != nil {
					t.Fatal(err)
				}
				if got, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("object %s differs from the file (%d bytes, want %d)", res.Key, len(got), len(data))
			}
		})
	}
}

// fillTo appends valid rows to a CSV file until it is exactly size bytes.
func fillTo(t *testing.T, path string, size int64) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	const row = "2026-01-05T10:00:00Z,s,1\n" // 25 bytes
	n := size - fi.Size()
	if n < int64(len(row)) {
		t.Fatalf("%s is %d bytes, too close to %d", path, fi.Size(), size)
	}
	tail := strings.Repeat(row, int(n)/len(row)-1)
	pad := int(n) - len(tail) - len(row)
	tail += "2026-01-05T10:00:00Z,s" + strings.Repeat("0", pad) + ",1\n"
	appendTo(t, path, tail)
	if fi, err := os.Stat(path); err != nil || fi.Size() != size {
		t.Fatalf("%s: %v bytes, want %d (%v)", path, fi.Size(), size, err)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOutputDoesNotHoldUpUploads: output lines (OnFile) come in the files'
// order, but a slow output (a full pipe, a slow terminal) never stops the
// uploads: here the first line is only written once every file is uploaded.
func TestOutputDoesNotHoldUpUploads(t *testing.T) {
	for _, parallel := range []int{1, 4} {
		t.Run(fmt.Sprintf("parallel %d", parallel), func(t *testing.T) {
			s, err := storage.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			spool := t.TempDir()
			var want []string
			for i := range 9 {
				want = append(want, writeFile(t, filepath.Join(spool, fmt.Sprintf("f%d.csv", i)), csvRows(i+1), t0.Add(time.Duration(i)*time.Minute)))
			}
			var (
				uploaded atomic.Int32
				allUp    = make(chan struct{})
				order    []string
			)
			cfg := Config{Store: s, Spool: spool, Gateway: "g", Validate: true, Parallel: parallel,
				AfterUpload: func(FileResult) error {
					if uploaded.Add(1) == int32(len(want)) {
						close(allUp)
					}
					return nil
				},
				OnFile: func(r FileResult) {
					if len(order) == 0 {
						select {
						case <-allUp:
						case <-time.After(time.Minute): // a deadlock guard, not a timing check
							t.Error("the uploads waited for the output")
						}
					}
					order = append(order, r.File)
				}}
			rep, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(order, " "); got != strings.Join(want, " ") || rep.Uploaded != len(want) || len(rep.Files) != len(want) {
				t.Fatalf("output order %s, report %+v; want %s", got, rep, want)
			}
		})
	}
}

// TestSpoolKeyConflictIsRejected: a spool file whose key holds other
// content can never be uploaded as it is: it is moved to the rejected
// folder (with a report saying how to send it), and the run goes on.
func TestSpoolKeyConflictIsRejected(t *testing.T) {
	forEachStore(t, func(t *testing.T, s storage.Store) {
		spool := t.TempDir()
		path := writeFile(t, filepath.Join(spool, "a.csv"), csvRows(2), t0)
		writeFile(t, filepath.Join(spool, "b.csv"), csvRows(3), t0.Add(time.Minute))
		sum := sha256.Sum256([]byte(csvRows(2)))
		key, err := GeneratedKey("", "gw", t0, hex.EncodeToString(sum[:]), ".csv")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put(t.Context(), key, strings.NewReader("other content"), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		rep, err := Run(t.Context(), Config{Store: s, Spool: spool, Gateway: "gw", Validate: true, Parallel: 1})
		if !errors.Is(err, ErrRejected) || rep.Rejected != 1 || rep.Uploaded != 1 {
			t.Fatalf("run: %+v, %v", rep, err)
		}
		var report RejectReport
		b, err := os.ReadFile(filepath.Join(spool, "rejected", "a.csv.error.json"))
		if err != nil || json.Unmarshal(b, &report) != nil || report.Key != key || report.File != path ||
			!strings.Contains(report.Hint, "new key") {
			t.Fatalf("report %s, %v", b, err)
		}
		if got := object(t, s, key); string(got) != "other content" {
			t.Fatalf("the existing object changed: %q", got)
		}
	})
}

// TestRejectedFilesNeverOverwritten: in the rejected folder no report is
// written over a file moved there (a spool file named like a report, in
// either order), and a file rejected under a name another rejected file
// holds at the same second is kept beside it, not deleted.
func TestRejectedFilesNeverOverwritten(t *testing.T) {
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := func() time.Time { return t0.Add(time.Hour) }
	bad := map[string]string{
		"a.csv":            "time,v\n2026-01-05T10:00:00Z\n",
		"a.csv.error.json": "{\"not\": \"json lines\"\n",
	}
	// rejected reads every file of the rejected folder that is not a report
	// whose file is beside it: the bodies kept, by the spool file their
	// report names.
	rejected := func(t *testing.T, spool string) map[string][]string {
		t.Helper()
		dir := filepath.Join(spool, "rejected")
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()+".error.json"))
			if err != nil {
				continue // a report, or a file without one
			}
			var rep RejectReport
			if err := json.Unmarshal(b, &rep); err != nil || rep.RejectedTo != filepath.Join(dir, e.Name()) {
				t.Fatalf("report of %s: %s (%v)", e.Name(), b, err)
			}
			body, err := os.ReadFile(rep.RejectedTo)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(rep.File)] = append(out[filepath.Base(rep.File)], string(body))
		}
		return out
	}
	for _, first := range []string{"a.csv", "a.csv.error.json"} {
		spool := t.TempDir()
		writeFile(t, filepath.Join(spool, first), bad[first], t0)
		for name, body := range bad {
			if name != first {
				writeFile(t, filepath.Join(spool, name), body, t0.Add(time.Minute))
			}
		}
		rep, err := Run(t.Context(), Config{Store: s, Spool: spool, Gateway: "gw", Validate: true, Now: now})
		if !errors.Is(err, ErrRejected) || rep.Rejected != 2 {
			t.Fatalf("%s first: %+v, %v", first, rep, err)
		}
		got := rejected(t, spool)
		for name, body := range bad {
			if len(got[name]) != 1 || got[name][0] != body {
				t.Fatalf("%s first: %s kept as %q, want its bytes once (all: %q)", first, name, got[name], got)
			}
		}
	}

	// b.csv rejected three times in the same second, each time with other
	// bytes: three files, none deleted.
	spool := t.TempDir()
	var bodies []string
	for i := range 3 {
		body := fmt.Sprintf("time,v\n2026-01-05T10:00:0%dZ\n", i)
		bodies = append(bodies, body)
		writeFile(t, filepath.Join(spool, "b.csv"), body, t0)
		if rep, err := Run(t.Context(), Config{Store: s, Spool: spool, Gateway: "gw", Validate: true, Now: now}); !errors.Is(err, ErrRejected) || rep.Rejected != 1 {
			t.Fatalf("run %d: %+v, %v", i, rep, err)
		}
	}
	got := rejected(t, spool)["b.csv"]
	slices.Sort(got)
	if !slices.Equal(got, bodies) {
		t.Fatalf("b.csv rejected three times kept %q, want %q", got, bodies)
	}

	// Every name taken: the file stays in the spool, nothing is deleted.
	tag := now().UTC().Format("20060102T150405Z")
	for n := 3; n <= 100; n++ {
		writeFile(t, filepath.Join(spool, "rejected", fmt.Sprintf("b-%s-%d.csv", tag, n)), "another file", t0)
	}
	writeFile(t, filepath.Join(spool, "b.csv"), "time,v\n2026-01-05T10:00:09Z\n", t0)
	if _, err := Run(t.Context(), Config{Store: s, Spool: spool, Gateway: "gw", Validate: true, Now: now}); err == nil || !strings.Contains(err.Error(), "are taken in") {
		t.Fatalf("every name taken: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(spool, "b.csv")); err != nil || string(b) != "time,v\n2026-01-05T10:00:09Z\n" {
		t.Fatalf("b.csv left in the spool: %q, %v", b, err)
	}
}
