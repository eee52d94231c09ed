package lake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/testutil/s3test"
)

// dyingTransport forwards the first `after` requests and then fails every
// request without sending it: the process died at that point, as far as
// the store can tell.
type dyingTransport struct {
	after int64
	n     atomic.Int64
}

var errDied = errors.New("process killed")

func (d *dyingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if d.n.Add(1) > d.after {
		return nil, errDied
	}
	return http.DefaultTransport.RoundTrip(r)
}

func s3ClientWith(srv s3test.Server, tr http.RoundTripper) *s3.Client {
	return s3.New(s3.Options{
		Region: srv.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		HTTPClient:  &http.Client{Transport: tr},
		Retryer:     aws.NopRetryer{},
	})
}

// TestMaintenanceKilledAtEveryStep stops a maintenance round on the S3
// server after its k-th request, for k from the first request to past the
// last one, as kill -9 would: every request after k fails without
// reaching the server. After each, a fresh maintenance round must finish,
// the rows must be those before, every batch id must still be loaded
// (snapshots or load history), and no file may be left that nothing
// references.
func TestMaintenanceKilledAtEveryStep(t *testing.T) {
	srv := s3test.FromEnv(t)
	ctx := context.Background()
	// Requests of a whole round, to know where to stop.
	total := func() int64 {
		tr := &dyingTransport{after: 1 << 40}
		l, tbl, _ := crashSetup(t, srv, tr)
		tr.n.Store(0)
		if _, err := tbl.Maintain(ctx, MaintainOptions{}); err != nil {
			t.Fatal(err)
		}
		_ = l
		return tr.n.Load()
	}()
	if total < 20 {
		t.Fatalf("a maintenance round made %d requests: the setup gives it nothing to do", total)
	}
	stride := max(1, total/25) // about 25 kill points over the round
	killed := 0
	for k := int64(1); k <= total+1; k += stride {
		tr := &dyingTransport{after: 1 << 40}
		l, tbl, want := crashSetup(t, srv, tr)
		tr.after = tr.n.Load() + k
		_, err := tbl.Maintain(ctx, MaintainOptions{})
		if err == nil && k < total { // after request total, none is left to fail
			t.Fatalf("kill after request %d of %d: maintenance did not fail", k, total)
		}
		if err != nil {
			killed++
		}
		// A fresh process: the same bucket, a working client, a clock past
		// the orphan age of every file the killed round left.
		later := time.Now().Add(3 * time.Hour)
		l2, err := Open(ctx, l.URI(), Options{S3: srv.Client(t), Now: func() time.Time { return later }})
		if err != nil {
			t.Fatal(err)
		}
		t2, err := l2.LoadTable(ctx, testName)
		if err != nil {
			t.Fatalf("kill after request %d: the table does not load: %v", k, err)
		}
		if got := scanRows(t, t2, 0); !slices.Equal(got, want) {
			t.Fatalf("kill after request %d: %d rows, want %d", k, len(got), len(want))
		}
		if _, err := t2.Maintain(ctx, MaintainOptions{Orphans: true}); err != nil {
			t.Fatalf("kill after request %d: the next maintenance: %v", k, err)
		}
		if got := scanRows(t, t2, 0); !slices.Equal(got, want) {
			t.Fatalf("kill after request %d, then maintenance: %d rows, want %d", k, len(got), len(want))
		}
		for i := range 8 {
			if _, ok, err := t2.FindLoaded(ctx, fmt.Sprintf("gw-%d.csv", i)); err != nil || !ok {
				t.Fatalf("kill after request %d: gw-%d.csv no longer loaded (%v)", k, i, err)
			}
		}
		requireConformantTable(t, l2, t2)
		if t.Failed() {
			t.Fatalf("kill after request %d of %d", k, total)
		}
	}
	t.Logf("maintenance killed at %d points of a round of %d requests; every state recovered", killed, total)
}

// crashSetup makes a table on the S3 server with eight small files over
// two days, set so that one maintenance round compacts both partitions,
// expires every snapshot but the newest and moves their batch ids into the
// load history; the lake's client goes through tr. It returns the rows.
func crashSetup(t *testing.T, srv s3test.Server, tr http.RoundTripper) (*Lake, *Table, []string) {
	t.Helper()
	ctx := context.Background()
	bucket := srv.NewBucket(t)
	l, err := Open(ctx, "s3://"+bucket+"/warehouse", Options{S3: s3ClientWith(srv, tr)})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTestTable(t, l)
	for i := range 8 {
		appendRows(t, tbl, fmt.Sprintf("gw-%d.csv", i), day0.Add(time.Duration(i%2)*24*time.Hour-time.Duration(i)*time.Hour), 5+i)
	}
	if err := tbl.SetProperties(ctx, map[string]string{PropCompactColdAfter: "1ms", PropSnapshotRetention: "1ms",
		PropMinSnapshots: "1", PropOrphanMinAge: "1h"}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	return l, tbl, scanRows(t, tbl, 0)
}

// TestMaintenanceRacesAppends runs maintenance rounds back to back while
// two writers append on the S3 server: every append commits once, every
// row is there, and the table stays conformant.
func TestMaintenanceRacesAppends(t *testing.T) {
	srv := s3test.FromEnv(t)
	ctx := context.Background()
	bucket := srv.NewBucket(t)
	clock := atomic.Int64{}
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	l, err := Open(ctx, "s3://"+bucket+"/warehouse", Options{S3: srv.Client(t), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	tbl := createTestTable(t, l)
	if err := tbl.SetProperties(ctx, map[string]string{PropSnapshotRetention: "2m", PropMinSnapshots: "2"}, nil); err != nil {
		t.Fatal(err)
	}
	const writers, each = 2, 25
	done := make(chan struct{})
	errs := make(chan error, writers+1)
	var rows atomic.Int64
	var stop atomic.Bool
	go func() { // the maintainer
		defer close(done)
		m, err := l.LoadTable(ctx, testName)
		if err != nil {
			errs <- err
			return
		}
		for !stop.Load() {
			if _, err := m.Maintain(ctx, MaintainOptions{Orphans: true}); err != nil {
				errs <- fmt.Errorf("maintenance: %w", err)
				return
			}
		}
	}()
	finished := make(chan struct{}, writers)
	for w := range writers {
		go func() {
			defer func() { finished <- struct{}{} }()
			tw, err := l.LoadTable(ctx, testName)
			if err != nil {
				errs <- err
				return
			}
			for i := range each {
				clock.Add(int64(time.Minute)) // a minute per append: snapshots expire, partitions cool down
				rec := rowsAt(t, tw, day0.Add(time.Duration(i)*time.Hour), 4, w)
				res, err := tw.Append(ctx, fmt.Sprintf("w%d/%02d.csv", w, i), []arrow.RecordBatch{rec}, AppendOptions{})
				rec.Release()
				if err != nil {
					errs <- err
					return
				}
				if res.Duplicate {
					errs <- fmt.Errorf("w%d/%02d.csv committed as a duplicate", w, i)
					return
				}
				rows.Add(4)
			}
		}()
	}
	for range writers {
		<-finished
	}
	stop.Store(true)
	<-done
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fresh, err := l.LoadTable(ctx, testName)
	if err != nil {
		t.Fatal(err)
	}
	if n := int64(len(scanRows(t, fresh, 0))); n != rows.Load() {
		t.Fatalf("%d rows, want %d", n, rows.Load())
	}
	for w := range writers {
		for i := range each {
			if _, ok, err := fresh.FindLoaded(ctx, fmt.Sprintf("w%d/%02d.csv", w, i)); err != nil || !ok {
				t.Fatalf("w%d/%02d.csv not loaded (%v)", w, i, err)
			}
		}
	}
	// Files merged away or replaced in the last hour stay until orphan
	// removal finds them old enough.
	clock.Add(int64(2 * time.Hour))
	if _, err := fresh.Maintain(ctx, MaintainOptions{Orphans: true}); err != nil {
		t.Fatal(err)
	}
	requireConformantTable(t, l, fresh)
}
