package faults

import (
	"bytes"
	"encoding/json"
	"errors"
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
// landing under lost responses (data files, metadata, landing deletes),
// a 5xx storm and kill -9 at a random moment of each trial; the runs
// after it (as cron starts them) are never blocked by a lease, and when
// nothing but the key no route takes is left, every table holds every row
// of its files once (the suite's own reader) and the unrouted key is still
// in the landing.
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
	for _, r := range []s3fault.Rule{
		{Name: "data file", Method: put, Bucket: kb, Key: "*/data/*", Action: s3fault.LoseResponse, Times: 3},
		{Name: "metadata", Method: put, Bucket: kb, Key: "*/metadata/v*.metadata.json", Action: s3fault.LoseResponse, Times: 2},
		{Name: "landing delete", Method: del, Bucket: lb, Key: "*/gw-*", Action: s3fault.LoseResponse, Times: 3},
		{Name: "5xx", Action: s3fault.Fail, Status: http.StatusInternalServerError, Code: "InternalError", Prob: 0.1, Times: scale(40, 200)},
	} {
		e.proxy.Add(r)
	}
	want := map[string][]string{}
	trials := scale(2, 8)
	typical := 2 * time.Second
	runs, failed, kills := 0, 0, 0
	for trial := range trials {
		trialRuns, trialFailed := 0, 0
		for i, tb := range routedTables {
			want[tb] = append(want[tb], e.dropFiles(t, tb+"/", i*1000+trial*50, scale(4, 8), 10)...)
			slices.Sort(want[tb])
		}
		killed, after, _ := runKilled(t, e.routedCommand(t), rng, typical)
		if killed {
			kills++
			figures.Lock()
			figures.Kills++
			figures.Unlock()
		}
		for {
			trialRuns++
			if runs++; runs > 8*trials {
				t.Fatalf("trial %d: files left after %d runs: %v", trial, runs, head(e.waitingFiles(t)))
			}
			start := time.Now()
			code, tables, log := routedRun(t, e.routedCommand(t))
			typical = max(time.Since(start), 100*time.Millisecond)
			for tb, c := range tables {
				if c == 11 || c == 12 {
					t.Fatalf("trial %d: %s was blocked by a lease (exit %d) after the kill at %s:\n%s", trial, tb, c, after, log)
				}
			}
			if code != 3 { // 3: the unrouted key
				failed++
				trialFailed++
				t.Logf("trial %d: exit %d:\n%s", trial, code, log)
			}
			if left := e.waitingFiles(t); slices.Equal(left, []string{"stray.csv"}) {
				break
			}
		}
		rows := 0
		for _, tb := range routedTables {
			st := readTable(t, e.direct, e.lakeBucket, warehousePrefix, "iot", tb)
			checkRows(t, st, want[tb])
			rows += len(st.rowIDs)
		}
		record("routed ingest (3 tables, kill -9)", trialRuns, trialFailed, e.proxy, rows, 0)
	}
	if leases := listKeys(t, e.direct, e.landingBucket, "_timelake/lease/"); len(leases) != 0 {
		t.Fatalf("leases left behind: %v", leases)
	}
	if e.proxy.Injected(s3fault.LoseResponse) == 0 || e.proxy.Injected(s3fault.Fail) == 0 {
		t.Fatalf("faults injected: %d lost responses, %d errors: the trial tested too little",
			e.proxy.Injected(s3fault.LoseResponse), e.proxy.Injected(s3fault.Fail))
	}
	t.Logf("%d trials, %d runs (%d not exit 3), %d killed, %d lost responses, %d errors injected", trials, runs, failed, kills,
		e.proxy.Injected(s3fault.LoseResponse), e.proxy.Injected(s3fault.Fail))
}
