package faults

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/testutil/s3fault"
)

// routedTables are the tables of the routed trials, each with its folder
// of the landing.
var routedTables = []string{"readings", "events", "meters"}

// routedCommand is a routed `timelake ingest --json` as cron runs it
// (one line for the three tables), through the proxy.
func (e *env) routedCommand(t *testing.T) *exec.Cmd {
	args := []string{"--json"}
	for _, tb := range routedTables {
		args = append(args, "--route", tb+"/**=iot."+tb)
	}
	cmd := e.ingestCommand(t, e.proxy.URL, args...)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(v string) bool { return strings.HasPrefix(v, "TIMELAKE_TABLE=") })
	return cmd
}

// routedRun runs cmd and returns its exit code, the exit code of each
// table in its --json report, and its output.
func routedRun(t *testing.T, cmd *exec.Cmd) (int, map[string]int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", cmd.Path, err)
	}
	var doc struct {
		Tables []struct {
			Table    string `json:"table"`
			ExitCode int    `json:"exit_code"`
		} `json:"tables"`
	}
	tables := map[string]int{}
	if json.Unmarshal(out.Bytes(), &doc) == nil {
		for _, tr := range doc.Tables {
			tables[tr.Table] = tr.ExitCode
		}
	}
	return code, tables, out.String() + errOut.String()
}

// TestRoutedFaults: one routed cron line loads three tables from one
// landing. Each trial drops files for every table, runs once under lost
// responses (data files, metadata, landing deletes: the run must end as
// if nothing happened, exit 3 for the key no route takes), drops more
// files, and runs under a 5xx storm, killed with SIGKILL at a random
// moment, then again as cron would until only the unrouted key waits. No
// run is blocked by a lease (no table exits 11 or 12), every table holds
// every row of its files once (the suite's own reader), and the unrouted
// key is still in the landing.
func TestRoutedFaults(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a dead holder is recognised from /proc")
	}
	seed := firstSeed()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	e := newEnv(t, seed)
	stray, _ := gatewayFile(9000, 3)
	e.putDirect(t, e.landingBucket, "stray.csv", stray)
	put, del := http.MethodPut, http.MethodDelete
	lb, kb := e.landingBucket, e.lakeBucket
	lost := []s3fault.Rule{
		{Name: "data file", Method: put, Bucket: kb, Key: "*/data/*", Action: s3fault.LoseResponse, Times: 3},
		{Name: "metadata", Method: put, Bucket: kb, Key: "*/metadata/v*.metadata.json", Action: s3fault.LoseResponse, Times: 2},
		{Name: "landing delete", Method: del, Bucket: lb, Key: "*/gw-*", Action: s3fault.LoseResponse, Times: 3},
	}
	storm := s3fault.Rule{Name: "5xx", Action: s3fault.Fail, Status: http.StatusInternalServerError, Code: "InternalError",
		Prob: 0.1, Times: scale(30, 40)}
	want := map[string][]string{}
	drop := func(first int) {
		for i, tb := range routedTables {
			want[tb] = append(want[tb], e.dropFiles(t, tb+"/", i*1000+first, scale(4, 8), 10)...)
			slices.Sort(want[tb])
		}
	}
	// run is one cron run; it fails the test when a table was blocked by
	// a lease, and returns the exit code.
	runs, failed := 0, 0
	run := func(trial int, what string) int {
		t.Helper()
		runs++
		code, tables, log := routedRun(t, e.routedCommand(t))
		for tb, c := range tables {
			if c == 11 || c == 12 {
				t.Fatalf("trial %d, %s: %s was blocked by a lease (exit %d):\n%s", trial, what, tb, c, log)
			}
		}
		if code != 3 { // 3: the unrouted key
			failed++
			t.Logf("trial %d, %s: exit %d:\n%s", trial, what, code, log)
		}
		return code
	}
	trials := scale(2, 8)
	var typical time.Duration
	kills := 0
	for trial := range trials {
		drop(trial * 100)
		e.proxy.Clear()
		for _, r := range lost {
			e.proxy.Add(r)
		}
		start := time.Now()
		code := run(trial, "lost responses")
		typical = max(time.Since(start), 100*time.Millisecond) // kills land within a run as long
		if code != 3 {
			t.Fatalf("trial %d: the run under lost responses exited %d, want 3 (the write landed; timelake must find out)", trial, code)
		}

		drop(trial*100 + 50)
		e.proxy.Clear()
		e.proxy.Add(storm)
		killed, after, _ := runKilled(t, e.routedCommand(t), rng, typical)
		if killed {
			kills++
		}
		for n := 0; !slices.Equal(e.waitingFiles(t), []string{"stray.csv"}); n++ {
			if n == 8 {
				t.Fatalf("trial %d: files left after 8 runs: %v", trial, head(e.waitingFiles(t)))
			}
			run(trial, fmt.Sprintf("run %d after the kill at %s", n+1, after))
		}
		for _, tb := range routedTables {
			checkRows(t, readTable(t, e.direct, e.lakeBucket, warehousePrefix, "iot", tb), want[tb])
		}
	}
	if leases := listKeys(t, e.direct, e.landingBucket, "_timelake/lease/"); len(leases) != 0 {
		t.Fatalf("leases left behind: %v", leases)
	}
	lostWant := 0
	for _, r := range lost {
		lostWant += r.Times * trials
	}
	if n := e.proxy.Injected(s3fault.LoseResponse); n != lostWant || e.proxy.Injected(s3fault.Fail) == 0 {
		t.Fatalf("faults injected: %d lost responses (want %d), %d errors: the trials tested too little", n, lostWant, e.proxy.Injected(s3fault.Fail))
	}
	rows := 0
	for _, tb := range routedTables {
		rows += len(readTable(t, e.direct, e.lakeBucket, warehousePrefix, "iot", tb).rowIDs)
	}
	figures.Lock()
	figures.Kills += kills
	figures.Unlock()
	record("routed ingest (3 tables, lost responses, 5xx, kill -9)", runs, failed, e.proxy, rows, 0)
	t.Logf("%d trials, %d runs (%d not exit 3), %d killed, %d lost responses, %d errors injected, %d rows checked",
		trials, runs, failed, kills, e.proxy.Injected(s3fault.LoseResponse), e.proxy.Injected(s3fault.Fail), rows)
}
