package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/logbuf"
)

// badCSV is a landing file the table refuses (a number column holds text).
var badCSV = []byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,dev-1,warm\n")

// TestOddNamesDoNotStopTheTable: in a local folder, names that hold a
// backslash, a tab, a newline or an ESC, and a path longer than 1,024
// bytes, load like any other (the name is the batch id); one such file
// that must be quarantined is kept under a hashed name with its key in the
// report, and a name that is not UTF-8 is quarantined with the reason. The
// other files load and the run is partial.
func TestOddNamesDoNotStopTheTable(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	deep := longKey(5, 240, "deep.csv") // 1,214 bytes
	var want []string
	good := []string{"gw/back\\slash.csv", "gw/tab\there.csv", "gw/new\nline.csv", "gw/esc\x1b[2J.csv", deep, "gw/plain.csv"}
	for i, k := range good {
		rows := readings(1, i, 3)
		e.put(t, k, csvFile(rows, false, false))
		for _, r := range rows {
			want = append(want, r.String())
		}
	}
	slices.Sort(want)
	e.put(t, "gw/bad\ttab.csv", badCSV)
	e.put(t, "gw/latin-\xfc.csv", csvFile(readings(1, 9, 3), false, false))

	rep, err := ingest.Run(ctx, e.config())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Loaded != len(good) || rep.Quarantined != 2 || !rep.Partial() {
		t.Fatalf("run: %+v", rep.Files)
	}
	if got := tableRows(t, e); !slices.Equal(got, want) {
		t.Fatalf("rows %d, want %d", len(got), len(want))
	}
	tbl, err := e.lake.LoadTable(ctx, tableName)
	if err != nil {
		t.Fatal(err)
	}
	var batches []string
	for _, b := range tbl.Batches() {
		batches = append(batches, b.BatchID)
	}
	if !slices.Equal(slices.Sorted(slices.Values(batches)), slices.Sorted(slices.Values(good))) {
		t.Fatalf("batch ids %q, want %q", batches, good)
	}
	for _, f := range rep.Files {
		if f.Status != ingest.Quarantined {
			continue
		}
		if !strings.HasPrefix(f.QuarantinedTo, "_rejected/"+landing.HashedFolder) {
			t.Errorf("%q quarantined to %q, want a hashed name", f.Key, f.QuarantinedTo)
		}
		body, _, err := storage.ReadAll(ctx, e.landing, f.QuarantinedTo+".error.json")
		if err != nil {
			t.Fatal(err)
		}
		var r landing.Report
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		if key := cmpOr(string(r.KeyBytes), r.Key); key != f.Key {
			t.Errorf("report of %q names %q", f.Key, key)
		}
		if f.Key == "gw/latin-\xfc.csv" && !strings.Contains(f.Reason, "not UTF-8") {
			t.Errorf("the name that is not UTF-8: %q", f.Reason)
		}
	}
	if left := e.keys(t, "gw/"); len(left) != 0 {
		t.Fatalf("left in the landing folder: %q", left)
	}
}

// longKey is a key below gw/ of n folders, each a name of width bytes
// (long, but each fits in a file name), and then name.
func longKey(n, width int, name string) string {
	return "gw/" + strings.Repeat(strings.Repeat("x", width)+"/", n) + name
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestLongKeyQuarantinedOnS3: on S3, a file that must be quarantined and
// whose key is too long to be kept below _rejected/ (S3 takes 1,024
// bytes) is kept under a hashed name with its key in the report; the
// others load and the run is partial. The next run has nothing to do.
func TestLongKeyQuarantinedOnS3(t *testing.T) {
	ctx := context.Background()
	e := s3Env(t)
	long := longKey(4, 249, "bad.csv") // 1,010 bytes
	e.put(t, long, badCSV)
	e.put(t, "gw/good.csv", csvFile(readings(1, 0, 4), false, false))
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.Loaded != 1 || rep.Quarantined != 1 || !rep.Partial() {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	var q ingest.FileResult
	for _, f := range rep.Files {
		if f.Status == ingest.Quarantined {
			q = f
		}
	}
	if q.Key != long || !strings.HasPrefix(q.QuarantinedTo, "_rejected/"+landing.HashedFolder) {
		t.Fatalf("quarantined %+v", q)
	}
	rows, err := (&landing.Bucket{Store: e.landing}).Rejected(ctx)
	if err != nil || len(rows) != 1 || rows[0].Key != long || !strings.Contains(rows[0].Reason, `cannot parse "warm"`) {
		t.Fatalf("landing rejected: %+v, %v", rows, err)
	}
	if rep, err := ingest.Run(ctx, e.config()); err != nil || len(rep.Files) != 0 {
		t.Fatalf("second run: %+v, %v", rep, err)
	}
}

// TestDownloadFolderTooSmall: a file that does not fit in the download
// folder fails alone, with the folder and its free space named; the
// others load, the run is partial and the file stays for a later run.
func TestDownloadFolderTooSmall(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	big := csvFile(readings(1, 0, 400), false, false)
	e.put(t, "gw/big.csv", big)
	e.put(t, "gw/small.csv", csvFile(readings(1, 1, 3), false, false))
	cfg := e.config()
	cfg.WorkDir = t.TempDir()
	restore := ingest.SetFreeBytes(int64(len(big) / 2))
	rep, err := ingest.Run(ctx, cfg)
	restore()
	if err != nil || rep.Loaded != 1 || rep.Failed != 1 || !rep.Partial() {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	f := rep.Files[0]
	if f.Key != "gw/big.csv" || f.Status != ingest.Failed || !strings.Contains(f.Reason, "does not fit in the download folder "+cfg.WorkDir+" (") ||
		!strings.Contains(f.Reason, " free); free space there, or set TMPDIR") || strings.Contains(f.Reason, "landing") && !strings.Contains(f.Reason, "stays in the landing bucket") {
		t.Fatalf("big file: %+v", f)
	}
	if left := e.keys(t, "gw/"); !slices.Equal(left, []string{"gw/big.csv"}) {
		t.Fatalf("landing folder %v", left)
	}

	// A download folder that does not exist fails the run, named.
	cfg.WorkDir = filepath.Join(t.TempDir(), "missing")
	_, err = ingest.Run(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "download folder "+cfg.WorkDir+":") {
		t.Fatalf("missing download folder: %v", err)
	}
}

// deniedStore is a landing folder that refuses to read one file, as a
// file of another user with mode 0600 is refused.
type deniedStore struct {
	*storage.LocalStore
	key string
}

func (d deniedStore) Get(ctx context.Context, key string) (io.ReadCloser, storage.ObjectInfo, error) {
	if key == d.key {
		return nil, storage.ObjectInfo{}, fmt.Errorf("get %s: %w", key, &fs.PathError{Op: "open", Path: d.Path(key), Err: fs.ErrPermission})
	}
	return d.LocalStore.Get(ctx, key)
}

// TestUnreadableFileFailsAlone: a landing file that timelake may not read
// fails alone (the store itself reads: the run's lease does), reported with
// its reason on every run, never as already loaded; the others load.
func TestUnreadableFileFailsAlone(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw/a-locked.csv", csvFile(readings(1, 0, 3), false, false))
	e.put(t, "gw/b.csv", csvFile(readings(1, 1, 3), false, false))
	cfg := e.config()
	cfg.Landing = deniedStore{e.landing.(*storage.LocalStore), "gw/a-locked.csv"}
	for run := 1; run <= 2; run++ {
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Failed != 1 || rep.AlreadyLoaded != 0 || !rep.Partial() {
			t.Fatalf("run %d: %+v, %v", run, rep, err)
		}
		if f := rep.Files[0]; f.Status != ingest.Failed || !strings.Contains(f.Reason, "permission denied") {
			t.Fatalf("run %d: %+v", run, f)
		}
	}
	if n := len(tableRows(t, e)); n != 3 {
		t.Fatalf("%d rows, want b's 3", n)
	}
}

// unlistedStore is a landing folder in which one folder cannot be read,
// as a folder of another user with mode 0700 cannot: its listing goes on
// without it and ends with the *storage.UnlistedError a LocalStore gives.
type unlistedStore struct {
	*storage.LocalStore
	folder string
}

func (u unlistedStore) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	err := u.LocalStore.List(ctx, prefix, func(o storage.ObjectInfo) error {
		if strings.HasPrefix(o.Key, u.folder) {
			return nil
		}
		return fn(o)
	})
	if err != nil || !strings.HasPrefix(u.folder, prefix) && !strings.HasPrefix(prefix, u.folder) {
		return err
	}
	return &storage.UnlistedError{Root: u.Path(""), Gaps: []storage.Unlisted{{Key: u.folder,
		Err: &fs.PathError{Op: "open", Path: strings.TrimSuffix(u.folder, "/"), Err: fs.ErrPermission}}}}
}

// TestUnreadableFolderFailsAlone: a folder of a local landing folder that
// timelake may not read fails alone: every run loads the other files,
// reports the folder as failed with the fix (and a warning names it), and
// is partial; its files load once it can be read.
func TestUnreadableFolderFailsAlone(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw-1/a.csv", csvFile(readings(1, 0, 3), false, false))
	e.put(t, "gw-2/locked/b.csv", csvFile(readings(2, 1, 3), false, false))
	e.put(t, "gw-3/c.csv", csvFile(readings(3, 2, 3), false, false))
	cfg := e.config()
	var logs logbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	cfg.Landing = unlistedStore{e.landing.(*storage.LocalStore), "gw-2/locked/"}
	for run := 1; run <= 2; run++ {
		e.put(t, fmt.Sprintf("gw-1/r%d.csv", run), csvFile(readings(1, 10+run, 3), false, false))
		rep, err := ingest.Run(ctx, cfg)
		if err != nil || rep.Failed != 1 || rep.Loaded != map[int]int{1: 3, 2: 1}[run] || !rep.Partial() {
			t.Fatalf("run %d: %+v, %v", run, rep, err)
		}
		i := slices.IndexFunc(rep.Files, func(f ingest.FileResult) bool { return f.Status == ingest.Failed })
		if f := rep.Files[i]; f.Key != "gw-2/locked/" || !strings.Contains(f.Reason, "this folder could not be listed (open gw-2/locked: permission denied)") ||
			!strings.Contains(f.Reason, "let the user that runs timelake read "+e.landing.(*storage.LocalStore).Path("gw-2/locked")+" (a folder also needs execute permission") {
			t.Fatalf("run %d: %+v", run, f)
		}
	}
	if !strings.Contains(logs.String(), `msg="a landing folder could not be listed: its files are not loaded until it can be" key=gw-2/locked/`) {
		t.Errorf("no warning names the folder:\n%s", logs.String())
	}
	cfg.Landing = e.landing // readable again
	rep, err := ingest.Run(ctx, cfg)
	if err != nil || rep.Loaded != 1 || rep.Files[0].Key != "gw-2/locked/b.csv" || rep.Partial() {
		t.Fatalf("run once readable: %+v, %v", rep, err)
	}
}

// TestFolderOfAnotherUserFailsAlone is TestUnreadableFolderFailsAlone with
// real permissions (not as root, whom they do not stop), through the
// LocalStore itself.
func TestFolderOfAnotherUserFailsAlone(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: folder permissions do not stop root (TestUnreadableFolderFailsAlone fakes the refusal)")
	}
	ctx := context.Background()
	e := localEnv(t)
	e.put(t, "gw-1/a.csv", csvFile(readings(1, 0, 3), false, false))
	e.put(t, "gw-2/locked/b.csv", csvFile(readings(2, 1, 3), false, false))
	locked := e.landing.(*storage.LocalStore).Path("gw-2/locked")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	rep, err := ingest.Run(ctx, e.config())
	if err != nil || rep.Loaded != 1 || rep.Failed != 1 || !rep.Partial() {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	if f := rep.Files[1]; f.Key != "gw-2/locked/" || f.Status != ingest.Failed || !strings.Contains(f.Reason, "permission denied") {
		t.Fatalf("the folder: %+v", f)
	}
}

// TestOddKeysOnS3: keys holding ESC, a tab, a newline, %, +, a space and
// non-ASCII letters load from an S3 landing bucket like any other, listed
// url-encoded. A server that cannot list a key as it is (versitygw writes
// ESC as U+FFFD in its XML listing, and ignores encoding-type=url) lists a
// name no GET finds: that file is failed, with the reason, on every run,
// and stays; it is never left out of the report.
func TestOddKeysOnS3(t *testing.T) {
	ctx := context.Background()
	e := s3Env(t)
	keys := []string{"gw/esc\x1b[31mred.csv", "gw/tab\there.csv", "gw/new\nline.csv", "gw/100%.csv", "gw/a+b.csv",
		"gw/with space.csv", "gw/température-ü.csv"}
	for i, k := range keys {
		e.put(t, k, csvFile(readings(1, i, 3), false, false))
	}
	// The bucket's clean-up deletes what the listing names, which may not
	// be this key.
	t.Cleanup(func() { e.landing.Delete(context.Background(), keys[0]) })
	var listed []string
	if err := e.landing.List(ctx, "gw/", func(o storage.ObjectInfo) error { listed = append(listed, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	mangled := !slices.Contains(listed, keys[0]) // the server cannot list ESC as it is
	t.Logf("the server lists ESC as it is: %v (%q)", !mangled, listed)
	for run := 1; run <= 2; run++ {
		rep, err := ingest.Run(ctx, e.config())
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if run == 1 && (rep.Loaded != len(keys)-1 && mangled || rep.Loaded != len(keys) && !mangled) {
			t.Fatalf("run %d: %+v", run, rep.Files)
		}
		if !mangled {
			break
		}
		if rep.Failed != 1 || !rep.Partial() {
			t.Fatalf("run %d: %+v, want the ESC key failed", run, rep.Files)
		}
		i := slices.IndexFunc(rep.Files, func(f ingest.FileResult) bool { return f.Status == ingest.Failed })
		if f := rep.Files[i]; !strings.Contains(f.Reason, "has U+FFFD in the key") || !strings.Contains(f.Reason, "rename the object") {
			t.Fatalf("run %d: %+v", run, f)
		}
		if _, err := e.landing.Stat(ctx, keys[0]); err != nil {
			t.Fatalf("run %d: the ESC key: %v, want it still in the landing bucket", run, err)
		}
	}
	if n := len(tableRows(t, e)); n != 3*(len(keys)-1) && mangled || n != 3*len(keys) && !mangled {
		t.Fatalf("%d rows", n)
	}
}

// getFails is an S3 landing bucket whose GET of key says it does not
// exist; with deleted, the object is deleted first, as a person or a run
// whose lease expired deletes a file between a listing and its GET.
type getFails struct {
	storage.Store
	key     string
	deleted bool
}

func (g getFails) Get(ctx context.Context, key string) (io.ReadCloser, storage.ObjectInfo, error) {
	if key != g.key {
		return g.Store.Get(ctx, key)
	}
	if g.deleted {
		if err := g.Store.Delete(ctx, key); err != nil {
			return nil, storage.ObjectInfo{}, err
		}
	}
	return nil, storage.ObjectInfo{}, fmt.Errorf("get %s: %w", key, storage.ErrNotExist)
}

// TestListedKeyThatGetDoesNotFind: a key listed whose GET says it does not
// exist while a HEAD still finds it is failed (exit 3), every run, never
// dropped; one really deleted meanwhile is left out with a warning. On the
// S3 server.
func TestListedKeyThatGetDoesNotFind(t *testing.T) {
	ctx := context.Background()
	for _, deleted := range []bool{false, true} {
		t.Run(fmt.Sprintf("deleted: %v", deleted), func(t *testing.T) {
			e := s3Env(t)
			e.put(t, "gw/a.csv", csvFile(readings(1, 0, 3), false, false))
			e.put(t, "gw/b.csv", csvFile(readings(1, 1, 3), false, false))
			cfg := e.config()
			var logs logbuf.Buffer
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			cfg.Landing = getFails{Store: e.landing, key: "gw/a.csv", deleted: deleted}
			rep, err := ingest.Run(ctx, cfg)
			if err != nil || rep.Loaded != 1 {
				t.Fatalf("run: %+v, %v", rep, err)
			}
			if deleted {
				if rep.Failed != 0 || len(rep.Files) != 1 || rep.Partial() || !strings.Contains(logs.String(), "a listed file was gone before it was read") {
					t.Fatalf("a deleted key: %+v\n%s", rep.Files, logs.String())
				}
				return
			}
			if rep.Failed != 1 || !rep.Partial() || rep.Files[0].Key != "gw/a.csv" ||
				!strings.Contains(rep.Files[0].Reason, "listed in the landing bucket but cannot be fetched") {
				t.Fatalf("a key a HEAD finds: %+v", rep.Files)
			}
		})
	}
}
