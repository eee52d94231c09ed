package lake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/lake/maintenance"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// The two partitions of budgetTable: four files of bigRows rows each on
// bigDay, four of a few rows on smallDay (the newer, compacted first).
var (
	bigDay   = time.Date(2026, 1, 4, 0, 0, 0, 0, time.UTC)
	smallDay = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
)

const bigRows = 40_000

// dayRows builds n rows spread over the day starting at day.
func dayRows(t testing.TB, sc *arrow.Schema, day time.Time, n, seed int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	step := 24 * time.Hour / time.Duration(n+1)
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(day.Add(time.Duration(i+1) * step).UnixMicro()))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("d%d", (i+seed)%5))
		b.Field(2).(*array.Float64Builder).Append(float64(i*10 + seed))
	}
	return b.NewRecordBatch()
}

// budgetTable creates the test table on l with two compaction groups,
// both cold, and returns its rows.
func budgetTable(t testing.TB, l *Lake) (*Table, []string) {
	t.Helper()
	ctx := context.Background()
	tbl := createTestTable(t, l)
	for i := range 4 {
		for _, p := range []struct {
			day time.Time
			n   int
		}{{bigDay, bigRows}, {smallDay, 10}} {
			rec := dayRows(t, tbl.ArrowSchema(), p.day, p.n, i)
			if _, err := tbl.Append(ctx, fmt.Sprintf("%s-%d", p.day.Format(time.DateOnly), i), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			rec.Release()
		}
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropCompactColdAfter: "1ms"}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	return tbl, scanRows(t, tbl, 0)
}

// dataOrphans lists the data files nothing references.
func dataOrphans(t testing.TB, tbl *Table) []string {
	t.Helper()
	res, err := tbl.RemoveOrphans(context.Background(), OrphanOptions{MinAge: time.Nanosecond, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range res.Files {
		if strings.HasPrefix(f, "data/") {
			out = append(out, f)
		}
	}
	return out
}

// compactedPartitions names the partitions of res's groups.
func compactedPartitions(res CompactResult) []string {
	var out []string
	for _, g := range res.Groups {
		out = append(out, g.Partition)
	}
	return out
}

// TestCompactStartsOnlyRewritesThatFit: with a deadline, a group whose
// rewrite is estimated (at the given rate, on the given clock) to end
// after it is not started, while a smaller one still is; without one,
// both are rewritten.
func TestCompactStartsOnlyRewritesThatFit(t *testing.T) {
	ctx := context.Background()
	tbl, want := budgetTable(t, newLocalLake(t))
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	// 10,000 rows a second: the small group takes 0.2 s, the large one
	// 16.2 s; 5 s are left.
	res, err := tbl.Compact(ctx, CompactOptions{Deadline: now.Add(5 * time.Second), Clock: clock, RewriteRate: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	if got := compactedPartitions(res); res.Deferred != 1 || len(got) != 1 || !strings.Contains(got[0], "2026-01-05") {
		t.Fatalf("compacted %v, deferred %d: want the small group only, the large one deferred", got, res.Deferred)
	}
	if got := scanRows(t, tbl, 0); !slices.Equal(got, want) {
		t.Fatal("rows changed")
	}
	res, err = tbl.Compact(ctx, CompactOptions{})
	if err != nil || res.Deferred != 0 || len(res.Groups) != 1 || !strings.Contains(res.Groups[0].Partition, "2026-01-04") {
		t.Fatalf("without a deadline: %v, deferred %d, %v", compactedPartitions(res), res.Deferred, err)
	}
	if got := scanRows(t, tbl, 0); !slices.Equal(got, want) {
		t.Fatal("rows changed")
	}
}

// TestMaintainBudgetLeavesWhatDoesNotFit: a round with a budget defers the
// rewrite its table's measured rate says will not fit (pending, for the
// next round); a round without a budget (tables maintain) rewrites it,
// and measures the rate of that rewrite for the next estimate.
func TestMaintainBudgetLeavesWhatDoesNotFit(t *testing.T) {
	ctx := context.Background()
	tbl, want := budgetTable(t, newLocalLake(t))
	st, err := tbl.loadMaintenanceState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 5,000 rows a second: even two of the large group's files (16.2 s)
	// do not fit the 9 s of the round's compaction.
	st.RewriteRate = 5_000
	if err := tbl.saveMaintenanceState(ctx, st); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rep, err := tbl.Maintain(ctx, MaintainOptions{Budget: 10 * time.Second, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Pending || rep.Compacted.Deferred != 1 || len(rep.Compacted.Groups) != 1 {
		t.Fatalf("pending %v, compacted %v, deferred %d: want the large group left for the next round",
			rep.Pending, compactedPartitions(rep.Compacted), rep.Compacted.Deferred)
	}
	rep, err = tbl.Maintain(ctx, MaintainOptions{Force: true})
	if err != nil || rep.Pending || rep.Compacted.Deferred != 0 || len(rep.Compacted.Groups) != 1 {
		t.Fatalf("without a budget: pending %v, compacted %v, deferred %d, %v", rep.Pending,
			compactedPartitions(rep.Compacted), rep.Compacted.Deferred, err)
	}
	if got := scanRows(t, tbl, 0); !slices.Equal(got, want) {
		t.Fatal("rows changed")
	}
	if st, err = tbl.loadMaintenanceState(ctx); err != nil || st.RewriteRate == 5_000 || st.RewriteRate <= 0 {
		t.Fatalf("rewrite rate %v after a rewrite of %d rows (%v), want it measured", st.RewriteRate, 4*bigRows, err)
	}
}

// proxiedLake opens a warehouse on the S3 server through the fault proxy p.
func proxiedLake(t testing.TB, srv s3test.Server, p *s3fault.Proxy) *Lake {
	t.Helper()
	client := s3.New(s3.Options{
		Region: srv.Region, BaseEndpoint: aws.String(p.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
	})
	l, err := Open(context.Background(), "s3://"+srv.NewBucket(t)+"/warehouse", Options{S3: client})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRewriteCutAtTheDeadline: the upload of the large group's output is
// held back by the fault proxy past the deadline: that rewrite is
// abandoned, the small group's commits alone, and no row and no file is
// lost or left behind. Cancelled instead (the round stopped), nothing
// commits and the small group's output is deleted too.
func TestRewriteCutAtTheDeadline(t *testing.T) {
	srv := s3test.FromEnv(t)
	for _, cancelled := range []bool{false, true} {
		t.Run(map[bool]string{false: "deadline", true: "cancelled"}[cancelled], func(t *testing.T) {
			p := s3fault.StartT(t, srv.Endpoint, 1)
			tbl, want := budgetTable(t, proxiedLake(t, srv, p))
			version := tbl.Version()
			p.Add(s3fault.Rule{Name: "slow upload", Method: http.MethodPut, Key: "*/data/time_day=2026-01-04/*", Delay: time.Minute})
			ctx := context.Background()
			st := maintenanceState{}
			opts := CompactOptions{Deadline: time.Now().Add(4 * time.Second), RewriteRate: 1e9, state: &st}
			if cancelled {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				time.AfterFunc(4*time.Second, cancel)
				opts = CompactOptions{}
			}
			res, err := tbl.Compact(ctx, opts)
			p.Clear()
			switch {
			case cancelled && (err == nil || !errors.Is(err, context.Canceled)):
				t.Fatalf("cancelled: %v, want the cancellation", err)
			case cancelled && tbl.Version() != version:
				t.Fatalf("cancelled: version %d -> %d, want nothing committed", version, tbl.Version())
			case !cancelled && (err != nil || res.Abandoned != 1 || len(res.Groups) != 1 || !strings.Contains(res.Groups[0].Partition, "2026-01-05")):
				t.Fatalf("deadline: compacted %v, abandoned %d, %v: want the small group only", compactedPartitions(res), res.Abandoned, err)
			case !cancelled && (st.RewriteRate <= 0 || st.RewriteRate > 1e9/2):
				// Later rounds plan the abandoned group with a lower rate.
				t.Fatalf("deadline: rewrite rate %v noted after the abandoned rewrite, want at most half the 1e9 planned with", st.RewriteRate)
			}
			fresh, err := tbl.lake.LoadTable(context.Background(), testName)
			if err != nil {
				t.Fatal(err)
			}
			if got := scanRows(t, fresh, 0); !slices.Equal(got, want) {
				t.Fatal("rows changed")
			}
			if o := dataOrphans(t, fresh); len(o) > 0 {
				t.Fatalf("data files left behind: %v", o)
			}
		})
	}
}

// cancelAfterCreate forwards requests; once armed, the first conditional
// create of a metadata version reaches the server, and then the caller's
// context is cancelled and the response lost: the commit's outcome is
// unknown to it.
type cancelAfterCreate struct {
	armed  atomic.Bool
	cancel context.CancelFunc
}

func (c *cancelAfterCreate) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".metadata.json") && r.Header.Get("If-None-Match") != "" &&
		c.armed.CompareAndSwap(true, false) {
		c.cancel()
		if resp != nil {
			resp.Body.Close()
		}
		return nil, errors.New("connection lost")
	}
	return resp, err
}

// TestRewriteWhoseCommitIsUnknownKeepsItsFiles: a rewrite whose commit
// landed while the round was stopped (its outcome unknown) keeps its new
// files: the version it wrote reads every row.
func TestRewriteWhoseCommitIsUnknownKeepsItsFiles(t *testing.T) {
	srv := s3test.FromEnv(t)
	tr := &cancelAfterCreate{}
	l, err := Open(context.Background(), "s3://"+srv.NewBucket(t)+"/warehouse", Options{S3: s3ClientWith(srv, tr)})
	if err != nil {
		t.Fatal(err)
	}
	tbl, want := budgetTable(t, l)
	version := tbl.Version()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr.cancel = cancel
	tr.armed.Store(true)
	if _, err := tbl.Compact(ctx, CompactOptions{}); err == nil {
		t.Fatal("the commit's outcome was hidden, yet Compact succeeded")
	}
	fresh, err := l.LoadTable(context.Background(), testName)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Version() != version+1 {
		t.Fatalf("version %d, want the rewrite's %d (its create reached the server)", fresh.Version(), version+1)
	}
	if got := scanRows(t, fresh, 0); !slices.Equal(got, want) {
		t.Fatal("rows changed")
	}
}

// TestCompactSplitsAGroupLargerThanARound: a cold partition of 40 small
// files makes one group whose rewrite (80,000 rows at 10,000 rows a
// second: 8.2 s) never fits a round of 2 s; each round rewrites the
// oldest files that fit instead (9 of them: 2 s), so the backlog shrinks
// every round until only groups whose two smallest files exceed a round
// are left, and the rows stay exact.
func TestCompactSplitsAGroupLargerThanARound(t *testing.T) {
	ctx := context.Background()
	tbl := createTestTable(t, newLocalLake(t))
	const files, rows = 40, 2_000
	for i := range files {
		rec := dayRows(t, tbl.ArrowSchema(), bigDay, rows, i)
		if _, err := tbl.Append(ctx, fmt.Sprintf("b-%02d", i), []arrow.RecordBatch{rec}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropCompactColdAfter: "1ms"}, nil); err != nil {
		t.Fatal(err)
	}
	want := scanRows(t, tbl, 0)
	live := func() int {
		t.Helper()
		h, _ := tbl.loaded()
		fs, _, err := tbl.liveFiles(ctx, h, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(fs)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var rounds, compacted []int
	for round := 0; round < 12; round++ {
		time.Sleep(2 * time.Millisecond) // the last output is cold too
		res, err := tbl.Compact(ctx, CompactOptions{Deadline: now.Add(2 * time.Second), Clock: clock, RewriteRate: 10_000})
		if err != nil {
			t.Fatal(err)
		}
		in := 0
		for _, g := range res.Groups {
			in += g.FilesIn
			if est := maintenance.RewriteEstimate(g.Rows, 10_000); est > 2*time.Second {
				t.Fatalf("round %d: a group of %d rows (%v) over the round's 2 s", round, g.Rows, est)
			}
		}
		if in == 0 {
			break
		}
		rounds = append(rounds, live())
		compacted = append(compacted, in)
		if got := scanRows(t, tbl, 0); !slices.Equal(got, want) {
			t.Fatalf("round %d: rows changed", round)
		}
	}
	t.Logf("files compacted per round %v, live files after each %v", compacted, rounds)
	if len(compacted) < 4 || compacted[0] != 9 {
		t.Fatalf("files compacted per round %v: want 9 in the first and progress for at least 4 rounds", compacted)
	}
	if n := live(); n > 8 {
		t.Errorf("%d live files left of %d, want the backlog compacted to a few", n, files)
	}
}
