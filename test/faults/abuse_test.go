package faults

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/serve"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// The abuse cases: requests and metadata that a careless or hostile party
// can send, counted on the wire by the fault proxy.

// TestAbuseNotificationFlood: ten notifications naming 1,000 keys each
// that do not exist, then one for a real file, to a serve whose every HEAD
// takes 10 ms: no bogus key costs a HEAD (a listing answers them all), at
// most one listing per notification, and the real file loads with its rows.
func TestAbuseNotificationFlood(t *testing.T) {
	e := newEnv(t, firstSeed())
	e.proxy.Add(s3fault.Rule{Name: "bogus HEADs", Method: http.MethodHead, Bucket: e.landingBucket, Key: "gw/bogus-*", Delay: 10 * time.Millisecond})
	e.proxy.Add(s3fault.Rule{Name: "landing listings", Method: http.MethodGet, Bucket: e.landingBucket, Query: "list-type"})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	loaded := map[string]ingest.FileResult{}
	srv, err := serve.New(serve.Config{Listener: ln, Sweep: time.Hour, Logger: quiet,
		Ingest: ingest.Config{Landing: e.landing, Lake: e.lake, Table: e.table, SeriesKey: []string{"device_id"},
			OnFile: func(r ingest.FileResult) { mu.Lock(); loaded[r.Key] = r; mu.Unlock() }}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	url := "http://" + ln.Addr().String()
	wait.For(t, "serve to take the lease", func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	listsBefore := e.proxy.Counts("landing listings").Matched

	notify := func(keys ...string) {
		t.Helper()
		evs := make([]string, len(keys))
		for i, k := range keys {
			evs[i] = `{"eventName":"OBJECT_CREATED_PUT","bucket":"` + e.landingBucket + `","object":{"key":"` + k + `"}}`
		}
		resp, err := http.Post(url+"/notify", "application/json", strings.NewReader(`{"events":[`+strings.Join(evs, ",")+`]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("notify: %d", resp.StatusCode)
		}
	}
	for n := range 10 {
		keys := make([]string, serve.MaxEventsPerRequest)
		for i := range keys {
			keys[i] = fmt.Sprintf("gw/bogus-%d-%04d.csv", n, i)
		}
		notify(keys...)
	}
	body, ids := gatewayFile(1, 10)
	e.putDirect(t, e.landingBucket, "gw/real.csv", body)
	notify("gw/real.csv")
	wait.For(t, "gw/real.csv loaded", func() bool { mu.Lock(); defer mu.Unlock(); return loaded["gw/real.csv"].Status == ingest.Loaded })

	if c := e.proxy.Counts("bogus HEADs"); c.Matched > 2*ingest.DefaultFilesPerCommit {
		t.Errorf("%d HEADs of keys that do not exist, want at most one load's worth", c.Matched)
	}
	if n := e.proxy.Counts("landing listings").Matched - listsBefore; n > 11 {
		t.Errorf("%d listings for 11 notifications", n)
	}
	t.Logf("10,000 keys that do not exist: %d HEADs of them, %d listings", e.proxy.Counts("bogus HEADs").Matched, e.proxy.Counts("landing listings").Matched-listsBefore)
	checkRows(t, e.read(t), ids)
	record("abuse: notification flood", 1, 0, e.proxy, len(ids), 0)
}

// TestAbuseLoadHistoryOutside: a timelake.load-history entry that leads out
// of the table ("../") makes no request for anything outside the table:
// ingest loads on and maintenance drops the entry, and the proxy saw no
// request for the object the entry points at.
func TestAbuseLoadHistoryOutside(t *testing.T) {
	e := newEnv(t, firstSeed())
	ctx := context.Background()
	body, ids := gatewayFile(1, 10)
	e.putDirect(t, e.landingBucket, "gw/a.csv", body)
	cfg := ingest.Config{Landing: e.landing, Lake: e.lake, Table: e.table, SeriesKey: []string{"device_id"}, Logger: quiet}
	if _, err := ingest.Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// warehouse/iot/faults/metadata/../../../victim.parquet is
	// warehouse/victim.parquet to a server that resolves dot segments.
	e.putDirect(t, e.lakeBucket, warehousePrefix+"/victim.parquet", body)
	e.proxy.Add(s3fault.Rule{Name: "victim", Bucket: e.lakeBucket, Key: "*victim.parquet"})
	tbl, err := e.lake.LoadTable(ctx, e.table)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropLoadHistory: "../../../victim.parquet"}, nil); err != nil {
		t.Fatal(err)
	}
	more, moreIDs := gatewayFile(2, 10)
	e.putDirect(t, e.landingBucket, "gw/b.csv", more)
	if rep, err := ingest.Run(ctx, cfg); err != nil || rep.Loaded != 1 {
		t.Fatalf("ingest: %+v, %v", rep, err)
	}
	if err := tbl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if rep, err := tbl.Maintain(ctx, lake.MaintainOptions{Force: true}); err != nil || len(rep.DroppedSegments) != 1 {
		t.Fatalf("maintenance: %+v, %v", rep.DroppedSegments, err)
	}
	if c := e.proxy.Counts("victim"); c.Matched != 0 {
		t.Fatalf("%d requests for the object the entry points at", c.Matched)
	}
	if keys := listKeys(t, e.direct, e.lakeBucket, warehousePrefix+"/victim.parquet"); len(keys) != 1 {
		t.Fatalf("the object outside the table: %v", keys)
	}
	all := append(ids, moreIDs...)
	slices.Sort(all)
	checkRows(t, e.read(t), all)
	record("abuse: load history entry outside the table", 2, 0, e.proxy, len(all), 0)
}
