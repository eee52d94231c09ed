package lake

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake/catalog"
	"github.com/timelake/timelake/internal/lake/loadhistory"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// segmentFiles lists the segments of log prefix in the store below the
// table's own folder.
func segmentFiles(t testing.TB, tbl *Table, prefix string) []string {
	t.Helper()
	var out []string
	dir := tbl.lake.ownKey(tbl.name, "")
	err := tbl.lake.store.List(context.Background(), dir, func(o storage.ObjectInfo) error {
		if name := strings.TrimPrefix(o.Key, dir); strings.HasPrefix(name, prefix) && !strings.Contains(name, "/") {
			out = append(out, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLostResponseOnSegment: the response to the conditional create of a
// load history segment (snapshot expiry) or of an outcome log segment is
// lost after the write landed; the SDK's retry reads 412 for the own
// segment. The write is recognised: the expiry and the outcomes commit,
// the keys are remembered once, in one segment.
func TestLostResponseOnSegment(t *testing.T) {
	srv := s3test.FromEnv(t)
	ctx := context.Background()
	lose := func(p *s3fault.Proxy, key string) {
		p.Add(s3fault.Rule{Name: "lost segment response", Method: http.MethodPut, Key: key,
			Action: s3fault.LoseResponse, Times: 1})
	}

	t.Run("load history", func(t *testing.T) {
		p := s3fault.StartT(t, srv.Endpoint, 1)
		tbl := createTestTable(t, proxiedLake(t, srv, p))
		appendRows(t, tbl, "gw-1/a.csv", day0, 3)
		appendRows(t, tbl, "gw-1/b.csv", day0.Add(time.Hour), 3)
		time.Sleep(2 * time.Millisecond)
		lose(p, "*"+loadhistory.HistoryPrefix+"*")
		res, err := tbl.Expire(ctx, ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1})
		if err != nil {
			t.Fatalf("expire after a lost response on its segment: %v", err)
		}
		if n := p.Injected(s3fault.LoseResponse); n != 1 {
			t.Fatalf("%d responses lost, want 1", n)
		}
		if res.Remembered != 1 {
			t.Errorf("%d keys remembered, want 1", res.Remembered)
		}
		if b, ok, err := tbl.FindLoaded(ctx, "gw-1/a.csv"); err != nil || !ok || !b.FromHistory {
			t.Errorf("expired key in the load history: %+v, %v, %v", b, ok, err)
		}
		segs := historySegments(tbl.Properties())
		files := segmentFiles(t, tbl, loadhistory.HistoryPrefix)
		if len(segs) != 1 || !slices.Equal(files, []string{segs[0].Name}) {
			t.Errorf("segments named %v, in the store %v: want one, the same", segs, files)
		}
		got, missing := scanAll(t, tbl)
		if len(missing) != 0 || got["loaded gw-1/a.csv"].Key == "" || got["loaded gw-1/b.csv"].Key == "" {
			t.Errorf("scan: %v, missing %v", got, missing)
		}
	})

	t.Run("outcome log", func(t *testing.T) {
		p := s3fault.StartT(t, srv.Endpoint, 1)
		tbl := createTestTable(t, proxiedLake(t, srv, p))
		appendRows(t, tbl, "gw-1/a.csv", day0, 3)
		lose(p, "*"+loadhistory.OutcomePrefix+"*")
		at := time.Now().UTC().Truncate(time.Millisecond)
		err := tbl.RecordOutcomes(ctx, []LoadRecord{{Key: "gw-2/bad.csv", Size: 9, LoadedAt: at,
			Status: OutcomeRejected, Reason: "row 1: bad", QuarantinedTo: "_rejected/gw-2/bad.csv"}})
		if err != nil {
			t.Fatalf("record outcomes after a lost response on their segment: %v", err)
		}
		if n := p.Injected(s3fault.LoseResponse); n != 1 {
			t.Fatalf("%d responses lost, want 1", n)
		}
		segs := outcomeLog.segments(tbl.Properties())
		files := segmentFiles(t, tbl, loadhistory.OutcomePrefix)
		if len(segs) != 1 || !slices.Equal(files, []string{segs[0].Name}) {
			t.Errorf("segments named %v, in the store %v: want one, the same", segs, files)
		}
		if got, _ := scanAll(t, tbl); got["rejected gw-2/bad.csv"].Reason != "row 1: bad" {
			t.Errorf("scan: %v, want the rejection once", got)
		}
	})
}

// TestCreateOwn: a conditional create recognises its own object under the
// key; another object there is a conflict, left as it is.
func TestCreateOwn(t *testing.T) {
	forEachLake(t, func(t *testing.T, l *Lake) {
		ctx := context.Background()
		key := "ns/own/_load-history-1-1-x.parquet"
		if err := storage.CreateOwn(ctx, l.store, key, []byte("ours"), storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := storage.CreateOwn(ctx, l.store, key, []byte("ours"), storage.PutOptions{}); err != nil {
			t.Errorf("the same bytes again: %v, want them taken for the own write", err)
		}
		if err := storage.CreateOwn(ctx, l.store, key, []byte("theirs"), storage.PutOptions{}); !errors.Is(err, storage.ErrPreconditionFailed) {
			t.Errorf("other bytes: %v, want a conflict", err)
		}
		if b, _, err := storage.ReadAll(ctx, l.store, key); err != nil || string(b) != "ours" {
			t.Errorf("the object: %q, %v, want it unchanged", b, err)
		}
	})
}

// TestLostResponseOnVersionHint: the responses to the version hint's
// conditional create (at the table's creation) and to its compare-and-swap
// (after an append) are lost after the writes landed: each is found on the
// next look, with no warning, and the hint names the newest version.
func TestLostResponseOnVersionHint(t *testing.T) {
	srv := s3test.FromEnv(t)
	p := s3fault.StartT(t, srv.Endpoint, 1)
	l := proxiedLake(t, srv, p)
	var logs bytes.Buffer
	l.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l.cat = catalog.NewFiles(l.warehouse()) // warns to logs
	p.Add(s3fault.Rule{Name: "lost hint response", Method: http.MethodPut, Key: "*/metadata/" + versionHintName,
		Action: s3fault.LoseResponse, Times: 2})
	tbl := createTestTable(t, l)
	appendRows(t, tbl, "gw-1/a.csv", day0, 3)
	if n := p.Injected(s3fault.LoseResponse); n != 2 {
		t.Fatalf("%d responses lost, want 2", n)
	}
	b, _, err := storage.ReadAll(context.Background(), l.store, catalog.MetadataPrefix(tbl.name)+versionHintName)
	if err != nil || string(b) != strconv.Itoa(tbl.Version()) {
		t.Errorf("version hint %q, %v; want %d", b, err, tbl.Version())
	}
	if logs.Len() > 0 {
		t.Errorf("warnings:\n%s", logs.String())
	}
}
