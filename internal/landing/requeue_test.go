package landing

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// forEachStore runs test on a local folder and on a bucket of the test S3
// server.
func forEachStore(t *testing.T, test func(t *testing.T, st storage.Store)) {
	t.Run("local", func(t *testing.T) {
		st, err := storage.NewLocalStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		test(t, st)
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.FromEnv(t)
		test(t, storage.NewS3Store(srv.Client(t), srv.NewBucket(t), "landing", storage.S3StoreOptions{}))
	})
}

func put(t *testing.T, st storage.Store, key, body string) {
	t.Helper()
	if _, err := st.Put(context.Background(), key, strings.NewReader(body), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, st storage.Store, key string) string {
	t.Helper()
	b, _, err := storage.ReadAll(context.Background(), st, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func keysOf(t *testing.T, st storage.Store) []string {
	t.Helper()
	var out []string
	if err := st.List(context.Background(), "", func(o storage.ObjectInfo) error { out = append(out, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRejectedAndRequeue: quarantined files are listed with their reports
// (a copy without one too), and requeued under their original keys; a file
// under the key is never overwritten, and the second copy of a key
// quarantined twice stays quarantined once the first is back.
func TestRejectedAndRequeue(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storage.Store) {
		ctx := context.Background()
		b := &Bucket{Store: st}
		at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
		for i, k := range []string{"gw/a.csv", "gw/b.csv", "gw/a.csv"} {
			put(t, st, k, "body of "+k+strings.Repeat("!", i))
			if _, err := b.Quarantine(ctx, k, Report{Reason: "bad " + k, Row: 2, Column: "v", At: at.Add(time.Duration(i) * time.Minute), Hint: "fix it"}); err != nil {
				t.Fatal(err)
			}
		}
		// A copy whose report was never written (a crash in between).
		put(t, st, "_rejected/gw/c.csv", "c")
		// Files outside the quarantine are not listed.
		put(t, st, "gw/d.csv", "d")

		rows, err := b.Rejected(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, r.Key+" <- "+r.QuarantinedTo+": "+r.Reason)
		}
		want := []string{
			"gw/a.csv <- _rejected/gw/a.csv: bad gw/a.csv",
			"gw/a.csv <- _rejected/gw/a.csv.20260105T100200.000000000Z: bad gw/a.csv",
			"gw/b.csv <- _rejected/gw/b.csv: bad gw/b.csv",
			"gw/c.csv <- _rejected/gw/c.csv: no report (the quarantine was interrupted before it was written)",
		}
		if !slices.Equal(got, want) {
			t.Fatalf("rejected\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if r := rows[0]; r.Row != 2 || r.Column != "v" || r.Hint != "fix it" || !r.At.Equal(at) || r.Size != int64(len("body of gw/a.csv")) {
			t.Errorf("first row %+v", r)
		}

		// A gateway sent b again meanwhile: not overwritten.
		put(t, st, "gw/b.csv", "new b")
		var results []string
		for _, r := range rows {
			res, err := b.Requeue(ctx, r, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res.Key+" "+res.Status)
		}
		if want := []string{"gw/a.csv requeued", "gw/a.csv not-requeued", "gw/b.csv not-requeued", "gw/c.csv requeued"}; !slices.Equal(results, want) {
			t.Errorf("requeue %v, want %v", results, want)
		}
		if got := read(t, st, "gw/a.csv"); got != "body of gw/a.csv" {
			t.Errorf("gw/a.csv holds %q", got)
		}
		if got := read(t, st, "gw/b.csv"); got != "new b" {
			t.Errorf("gw/b.csv was overwritten: %q", got)
		}
		wantKeys := []string{
			"_rejected/gw/a.csv.20260105T100200.000000000Z", "_rejected/gw/a.csv.20260105T100200.000000000Z.error.json",
			"_rejected/gw/b.csv", "_rejected/gw/b.csv.error.json",
			"gw/a.csv", "gw/b.csv", "gw/c.csv", "gw/d.csv",
		}
		if got := keysOf(t, st); !slices.Equal(got, wantKeys) {
			t.Errorf("keys\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantKeys, "\n"))
		}
	})
}

// TestRequeueRefusesKeysIngestSkips: a report naming a key ingest would not
// load (the quarantine itself, a hidden name) is not written there.
func TestRequeueRefusesKeysIngestSkips(t *testing.T) {
	st, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &Bucket{Store: st}
	put(t, st, "_rejected/x.csv", "x")
	for _, key := range []string{"_rejected/x.csv", "gw/.hidden.csv"} {
		if _, err := b.Requeue(context.Background(), Rejected{Key: key, QuarantinedTo: "_rejected/x.csv"}, ""); err == nil {
			t.Errorf("requeue to %s: no error", key)
		}
	}
	if keys := keysOf(t, st); !slices.Equal(keys, []string{"_rejected/x.csv"}) {
		t.Errorf("keys %v", keys)
	}
}

// TestDiscard: a quarantined copy and its report are archived below
// ArchivePrefix (a second copy of the same path with a time suffix), or
// deleted; a dry run moves nothing; nothing archived is listed for ingest.
func TestDiscard(t *testing.T) {
	forEachStore(t, func(t *testing.T, st storage.Store) {
		ctx := context.Background()
		b := &Bucket{Store: st}
		at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
		quarantine := func(key string) Rejected {
			t.Helper()
			put(t, st, key, "body of "+key)
			if _, err := b.Quarantine(ctx, key, Report{Reason: "bad", At: at, Kind: KindFile}); err != nil {
				t.Fatal(err)
			}
			rows, err := b.Rejected(ctx)
			if err != nil || len(rows) != 1 {
				t.Fatalf("rejected: %+v %v", rows, err)
			}
			return rows[0]
		}
		r := quarantine("gw/a.csv")
		if r.Kind != KindFile {
			t.Errorf("kind %q, want the report's", r.Kind)
		}
		if res, err := b.Discard(ctx, r, false, true, at); err != nil || res.Status != WouldArchive || len(keysOf(t, st)) != 2 {
			t.Fatalf("dry run: %+v %v %v", res, err, keysOf(t, st))
		}
		for i, want := range []string{"_timelake/discarded/gw/a.csv", "_timelake/discarded/gw/a.csv.20260105T100000.000000000Z"} {
			if i > 0 {
				r = quarantine("gw/a.csv")
			}
			res, err := b.Discard(ctx, r, false, false, at)
			if err != nil || res.Status != Archived || res.ArchivedTo != want {
				t.Fatalf("archive %d: %+v %v", i, res, err)
			}
			if got := read(t, st, want); got != "body of gw/a.csv" {
				t.Errorf("archived copy holds %q", got)
			}
			if !strings.Contains(read(t, st, want+".error.json"), `"kind": "file"`) {
				t.Errorf("archived report: %s", read(t, st, want+".error.json"))
			}
		}
		r = quarantine("gw/b.csv")
		if res, err := b.Discard(ctx, r, true, false, at); err != nil || res.Status != Deleted || res.ArchivedTo != "" {
			t.Fatalf("delete: %+v %v", res, err)
		}
		want := []string{"_timelake/discarded/gw/a.csv", "_timelake/discarded/gw/a.csv.20260105T100000.000000000Z",
			"_timelake/discarded/gw/a.csv.20260105T100000.000000000Z.error.json", "_timelake/discarded/gw/a.csv.error.json"}
		if got := keysOf(t, st); !slices.Equal(got, want) {
			t.Errorf("keys\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		var listed []string
		if err := b.List(ctx, "", func(o storage.ObjectInfo) error { listed = append(listed, o.Key); return nil }); err != nil || len(listed) != 0 {
			t.Errorf("ingest would load the archive: %v %v", listed, err)
		}
	})
}

// TestQuarantineAnyKey: a file whose key cannot be kept in the quarantine
// as it is (too long once prefixed; a tab, a newline, an ESC or a
// backslash, which timelake does not write; a path segment too long for a
// file name; not UTF-8) is quarantined under a fixed-length name derived
// from the key, its report holds the key, and landing rejected and
// requeue take the key from the report.
func TestQuarantineAnyKey(t *testing.T) {
	long := "gw" // 1,007 bytes: fits S3 below "landing/", not once quarantined
	for range 4 {
		long += "/" + strings.Repeat("x", 248)
	}
	long += "/long.csv"
	deep := "gw" // a path of 1,263 bytes, each name below 255
	for range 5 {
		deep += "/" + strings.Repeat("d", 250)
	}
	deep += "/a.csv"
	forEachStore(t, func(t *testing.T, st storage.Store) {
		ctx := context.Background()
		b := &Bucket{Store: st}
		keys := []string{long, "gw/tab\there.csv", "gw/back\\slash.csv", "gw/" + strings.Repeat("n", 240) + ".csv"}
		if _, local := st.(*storage.LocalStore); local {
			keys = append(keys, "gw/new\nline.csv", "gw/esc\x1b[31m.csv", deep, "gw/latin-\xfc.csv")
		}
		copies := map[string]string{}
		for _, k := range keys {
			put(t, st, k, "body of "+k)
			dst, err := b.Quarantine(ctx, k, Report{Reason: "bad", At: time.Now()})
			if err != nil {
				t.Fatalf("quarantine %q: %v", k, err)
			}
			if !strings.HasPrefix(dst, "_rejected/"+HashedFolder) || !strings.HasSuffix(dst, ".csv") || len(dst) != len("_rejected/"+HashedFolder)+64+4 {
				t.Fatalf("quarantine %q to %q, want a hashed name", k, dst)
			}
			if dst != b.QuarantineKey(k) {
				t.Fatalf("quarantined to %q, QuarantineKey says %q", dst, b.QuarantineKey(k))
			}
			copies[dst] = k
		}
		rows, err := b.Rejected(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(keys) {
			t.Fatalf("%d rejected, want %d: %+v", len(rows), len(keys), rows)
		}
		for _, r := range rows {
			if r.Key != copies[r.QuarantinedTo] || r.Reason != "bad" {
				t.Fatalf("rejected %+v, want key %q", r, copies[r.QuarantinedTo])
			}
			if res, err := b.CheckRequeue(ctx, r); err != nil || res.Status != WouldRequeue { // the dry run agrees
				t.Fatalf("dry run of the requeue of %q: %+v, %v", r.Key, res, err)
			}
			if res, err := b.Requeue(ctx, r, t.TempDir()); err != nil || res.Status != Requeued {
				t.Fatalf("requeue %q: %+v, %v", r.Key, res, err)
			}
			if got := read(t, st, r.Key); got != "body of "+r.Key {
				t.Fatalf("requeued %q holds %q", r.Key, got)
			}
		}
		if n := len(keysOf(t, st)); n != len(keys) {
			t.Fatalf("%d keys left, want the %d requeued", n, len(keys))
		}

		// A hashed copy without its report: the key is unknown, and
		// requeue says so instead of guessing.
		put(t, st, long, "again")
		dst := b.QuarantineKey(long)
		if err := st.Copy(ctx, long, dst); err != nil {
			t.Fatal(err)
		}
		rows, err = b.Rejected(ctx)
		if err != nil || len(rows) != 1 || rows[0].Key != "" || !strings.Contains(rows[0].Reason, "a hash of its landing key") {
			t.Fatalf("a hashed copy without a report: %+v, %v", rows, err)
		}
		if _, err := b.Requeue(ctx, rows[0], t.TempDir()); err == nil || !strings.Contains(err.Error(), "landing key is unknown") {
			t.Fatalf("requeue of a copy without its key: %v", err)
		}
	})
}

// TestRequeueSkipAndFilter: what requeue skips and why, and what the
// filters select.
func TestRequeueSkipAndFilter(t *testing.T) {
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	broken := Rejected{Key: "gw-1/a.csv", Kind: KindFile, At: at, Reason: "gw-1/a.csv: the gzip data is truncated"}
	setting := Rejected{Key: "gw-2/b.csv", Kind: KindSetting, At: at.Add(time.Hour), Reason: "wrong number of fields"}
	old := Rejected{Key: "gw-2/c.csv", At: at, Reason: "x"} // a report of an earlier version: no kind
	loaded := setting
	loaded.Loaded = &Loaded{SnapshotID: 7, At: at.Add(2 * time.Hour), Since: true}
	for _, tc := range []struct {
		r    Rejected
		bulk bool
		want string
	}{
		{broken, true, "the file itself is broken"}, {broken, false, ""},
		{setting, true, ""}, {old, true, ""},
		{loaded, false, "its key was loaded since it was quarantined (snapshot 7 at 2026-01-05T12:00:00Z)"},
	} {
		if got := RequeueSkip(tc.r, tc.bulk); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s bulk %v: %q, want %q", tc.r.Key, tc.bulk, got, tc.want)
		}
	}
	rows := []Rejected{broken, setting, old}
	for _, tc := range []struct {
		f    RejectedFilter
		want []string
	}{
		{RejectedFilter{}, []string{"gw-1/a.csv", "gw-2/b.csv", "gw-2/c.csv"}},
		{RejectedFilter{Prefix: "gw-2/"}, []string{"gw-2/b.csv", "gw-2/c.csv"}},
		{RejectedFilter{Reason: "GZIP"}, []string{"gw-1/a.csv"}},
		{RejectedFilter{Since: at.Add(time.Minute)}, []string{"gw-2/b.csv"}},
		{RejectedFilter{Prefix: "gw-2/", Reason: "fields", Since: at}, []string{"gw-2/b.csv"}},
	} {
		var got []string
		for _, r := range tc.f.Filter(rows) {
			got = append(got, r.Key)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.f, got, tc.want)
		}
	}
	marked := []Rejected{broken, setting}
	err := MarkLoaded(context.Background(), marked, func(_ context.Context, key string) (int64, time.Time, bool, error) {
		return 9, at.Add(-time.Hour), key == "gw-1/a.csv", nil
	})
	if err != nil || marked[0].Loaded == nil || marked[0].Loaded.Since || marked[1].Loaded != nil {
		t.Errorf("marked %+v %+v, %v", marked[0].Loaded, marked[1].Loaded, err)
	}
}

// TestQuarantineKeepsTheFileMode: in a folder, the quarantined copy and its
// report are as private as the file was.
func TestQuarantineKeepsTheFileMode(t *testing.T) {
	st, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put(t, st, "gw/private.csv", "secret")
	if err := os.Chmod(st.Path("gw/private.csv"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &Bucket{Store: st}
	dst, err := b.Quarantine(context.Background(), "gw/private.csv", Report{Reason: "bad", Value: "secret", At: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{dst, dst + reportSuffix} {
		fi, err := os.Stat(st.Path(k))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", k, fi.Mode().Perm())
		}
	}
}
