package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/s3fault"
)

// fileTime is when the rows of gateway file i begin (gatewayFile).
func fileTime(i int) time.Time {
	return time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour)
}

// rowOf parses a row id of gatewayFile: its file and row; its device is
// dev-<row%3>.
func rowOf(t *testing.T, id string) (file, row int) {
	t.Helper()
	if _, err := fmt.Sscanf(id, "f%04d-r%03d", &file, &row); err != nil {
		t.Fatalf("row id %q: %v", id, err)
	}
	return file, row
}

// devicePredicate is the delete of the rows of one device in gateway
// files [first, end): its arguments and whether a row id matches it.
type devicePredicate struct {
	device     int
	first, end int
}

func (p devicePredicate) args() []string {
	return []string{"--where", fmt.Sprintf("device_id=dev-%d", p.device),
		"--from", fileTime(p.first).Format(time.RFC3339), "--to", fileTime(p.end).Format(time.RFC3339)}
}

func (p devicePredicate) matches(t *testing.T, id string) bool {
	f, r := rowOf(t, id)
	return r%3 == p.device && f >= p.first && f < p.end
}

// split parts ids into those p matches and the others.
func (p devicePredicate) split(t *testing.T, ids []string) (matched, kept []string) {
	for _, id := range ids {
		if p.matches(t, id) {
			matched = append(matched, id)
		} else {
			kept = append(kept, id)
		}
	}
	return matched, kept
}

// deleteReport is the part of `tables delete --json` the checks read.
type deleteReport struct {
	Rows       int64  `json:"rows"`
	SnapshotID *int64 `json:"snapshot_id"`
}

// deleteCommand is `timelake tables delete TABLE args... --yes --json`
// against endpoint.
func (e *env) deleteCommand(t *testing.T, endpoint string, args ...string) *exec.Cmd {
	return e.command(t, endpoint, append(append([]string{"tables", "delete", e.table.String()}, args...), "--yes", "--json")...)
}

// runDelete runs cmd (a deleteCommand) to its end and returns its report;
// a failed run fails the test.
func runDelete(t *testing.T, cmd *exec.Cmd) deleteReport {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("tables delete exited %d:\n%s%s", ee.ExitCode(), out.String(), errOut.String())
		}
		t.Fatal(err)
	}
	var rep deleteReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("tables delete --json: %v:\n%s", err, out.String())
	}
	return rep
}

// TestKill9Delete: `timelake tables delete --yes` is killed with SIGKILL
// at a random moment (while it reads, rewrites or commits the files of
// the rows it deletes). The table then holds either every row it held or
// exactly those the predicate does not match, never a part of the delete:
// no file the killed run wrote is referenced unless its commit landed, and
// then every input file with matching rows is gone. The same delete run
// again finishes (the rows the kill left, or none) with exactly the rows
// that do not match. One table lives through all trials, each adding
// files and deleting a device's rows from them; maintenance at the end
// removes what the killed runs left.
func TestKill9Delete(t *testing.T) {
	seed := firstSeed()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	e := newEnv(t, seed)
	// Data file writes and reads are slowed, so that a delete spends most
	// of its run rewriting files and the kills land there.
	e.proxy.Add(s3fault.Rule{Name: "slow data writes", Method: http.MethodPut, Bucket: e.lakeBucket, Key: "*/data/*",
		Action: s3fault.Forward, Delay: 20 * time.Millisecond})
	e.proxy.Add(s3fault.Rule{Name: "slow data reads", Method: http.MethodGet, Bucket: e.lakeBucket, Key: "*/data/*",
		Action: s3fault.Forward, Delay: 10 * time.Millisecond})
	var rows []string
	trials := scale(4, 30)
	files := scale(10, 16)
	// Kills land at a random moment of a typical delete: as long as the
	// last one that ran to its end.
	typical := 2 * time.Second
	outcomes := map[string]int{}
	for trial := range trials {
		first := trial * 100
		rows = append(rows, e.load(t, first, files, 30)...)
		slices.Sort(rows)
		pred := devicePredicate{device: trial % 3, first: first, end: first + files}
		matched, kept := pred.split(t, rows)
		before := e.read(t)
		checkRows(t, before, rows)
		if len(before.files) < files {
			t.Fatalf("trial %d: %d data files, want at least %d", trial, len(before.files), files)
		}

		start, window := time.Now(), typical
		killed, after, out := runKilled(t, e.deleteCommand(t, e.proxy.URL, pred.args()...), rng, window)
		if !killed {
			typical = max(time.Since(start), 50*time.Millisecond) // how long a whole delete runs
		}
		st := e.read(t)
		committed := false
		switch {
		case slices.Equal(st.rowIDs, rows):
			// Not committed: the table references the files it did.
			if !sameKeys(st.files, before.files) {
				t.Fatalf("trial %d: killed at %s, the rows are all there but the table references other files: %v, before %v",
					trial, after, keysOf(st.files), keysOf(before.files))
			}
		case slices.Equal(st.rowIDs, kept):
			committed = true
			for key, ids := range before.files {
				if m, _ := pred.split(t, ids); len(m) > 0 && st.files[key] != nil {
					t.Fatalf("trial %d: input file %s with %d matching rows is still referenced", trial, key, len(m))
				}
			}
		default:
			t.Errorf("trial %d: killed at %s, the table holds %d rows: neither the %d before the delete nor the %d after:\n%s",
				trial, after, len(st.rowIDs), len(rows), len(kept), out)
			checkRows(t, st, kept) // names the rows lost or doubled
		}
		outcome := map[bool]string{false: "not committed", true: "committed"}[committed]
		if !killed {
			outcome = "finished before the kill"
		}
		outcomes[outcome]++
		t.Logf("trial %d: kill at %s of a typical %s: %s", trial, after.Round(time.Millisecond), window.Round(time.Millisecond), outcome)

		start = time.Now()
		rep := runDelete(t, e.deleteCommand(t, e.proxy.URL, pred.args()...))
		want := int64(len(matched))
		if committed {
			want = 0
		} else {
			typical = max(time.Since(start), 50*time.Millisecond)
		}
		if rep.Rows != want || (rep.SnapshotID != nil) != (want > 0) {
			t.Fatalf("trial %d: the delete run again reports %+v, want %d rows", trial, rep, want)
		}
		st = e.read(t)
		checkRows(t, st, kept)
		rows = kept
		figures.Lock()
		if killed {
			figures.Kills++
		}
		figures.Unlock()
		record("kill -9 tables delete", 2, 0, nil, len(st.rowIDs), 0)
	}
	t.Logf("%d trials: %v", trials, outcomes)

	tbl, err := e.maintenanceLake(t).LoadTable(context.Background(), e.table)
	if err != nil {
		t.Fatal(err)
	}
	strays := len(e.read(t).strays)
	if _, err := tbl.Maintain(context.Background(), lake.MaintainOptions{Force: true, Orphans: true}); err != nil {
		t.Fatal(err)
	}
	st := e.read(t)
	checkRows(t, st, rows)
	if len(st.strays) != 0 {
		t.Fatalf("after maintenance %d files are left that nothing references: %v", len(st.strays), head(st.strays))
	}
	figures.Lock()
	figures.Strays += strays
	figures.Unlock()
}

func sameKeys(a, b map[string][]string) bool {
	return slices.Equal(keysOf(a), keysOf(b))
}

func keysOf(m map[string][]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// runUntilOK runs the command cmd makes until one run exits 0, at most
// tries times, and returns how many runs it took, how many failed, and the
// output of the last (its stdout alone when it exited 0). It calls no
// method of testing.T that ends a test, so that it can run beside others.
func runUntilOK(cmd func() *exec.Cmd, tries int) (runs, failed int, out string, err error) {
	for runs < tries {
		runs++
		var stdout, stderr bytes.Buffer
		c := cmd()
		c.Stdout, c.Stderr = &stdout, &stderr
		if err = c.Run(); err == nil {
			return runs, failed, stdout.String(), nil
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return runs, failed, "", err
		}
		failed++
		out = stdout.String() + stderr.String()
	}
	return runs, failed, out, fmt.Errorf("%d runs failed, the last: %w:\n%s", runs, err, out)
}

// TestDeleteRacesIngestAndMaintenance: `tables delete`, an ingest run
// loading new files and a `tables maintain` round start together, all
// three through the fault proxy (lost responses on data files, manifests
// and metadata, 500s on writes); a run that fails is run again. The new
// files' rows never match the delete's predicate, and those of the files
// loaded before are matched by it or not: afterwards the table holds every
// row of the new files, none of the old rows the predicate matches, and
// the other old rows, each exactly once (none lost, none brought back by a
// compaction of files the delete rewrote, none doubled by an attempt whose
// response was lost). Maintenance with the clock an hour later leaves no
// file behind and moves no row.
func TestDeleteRacesIngestAndMaintenance(t *testing.T) {
	for i := range scale(2, 8) {
		seed := firstSeed() + uint64(i)
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { deleteRace(t, seed) })
	}
}

func deleteRace(t *testing.T, seed uint64) {
	e := newEnv(t, seed)
	const oldFiles, newFiles, rows = 10, 10, 20
	old := e.load(t, 0, oldFiles, rows)
	pred := devicePredicate{device: 1, first: 0, end: oldFiles}
	matched, want := pred.split(t, old)
	fresh := e.dropFiles(t, "", oldFiles, newFiles, rows)
	for _, id := range fresh {
		if pred.matches(t, id) {
			t.Fatalf("new row %s matches the delete", id)
		}
	}
	want = append(want, fresh...)
	slices.Sort(want)

	kb, put := e.lakeBucket, http.MethodPut
	for _, r := range []s3fault.Rule{
		{Name: "lost data file", Method: put, Bucket: kb, Key: "*/data/*", Action: s3fault.LoseResponse, Prob: 0.3, Times: 3},
		{Name: "lost manifest", Method: put, Bucket: kb, Key: "*/metadata/*.avro", Action: s3fault.LoseResponse, Prob: 0.3, Times: 2},
		{Name: "lost metadata", Method: put, Bucket: kb, Key: "*/metadata/v*.metadata.json", Action: s3fault.LoseResponse, Prob: 0.3, Times: 2},
		{Name: "5xx", Method: put, Bucket: kb, Action: s3fault.Fail, Status: http.StatusInternalServerError, Code: "InternalError",
			Prob: 0.15, Times: 20},
		// Data file writes are slowed, so that the three runs overlap.
		{Name: "slow", Method: put, Bucket: kb, Key: "*/data/*", Action: s3fault.Forward, Delay: 20 * time.Millisecond},
	} {
		e.proxy.Add(r)
	}
	timelakeBinary(t)
	jobs := []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{"tables delete", func() *exec.Cmd { return e.deleteCommand(t, e.proxy.URL, pred.args()...) }},
		{"ingest", func() *exec.Cmd { return e.ingestCommand(t, e.proxy.URL) }},
		{"tables maintain", func() *exec.Cmd { return e.command(t, e.proxy.URL, "tables", "maintain", e.table.String()) }},
	}
	type result struct {
		runs, failed int
		out          string
		err          error
	}
	results := make([]result, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.runs, r.failed, r.out, r.err = runUntilOK(j.cmd, 8)
		}()
	}
	wg.Wait()
	runs, failed := 0, 0
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", jobs[i].name, r.err)
		}
		runs, failed = runs+r.runs, failed+r.failed
	}
	var rep deleteReport
	if err := json.Unmarshal([]byte(results[0].out), &rep); err != nil {
		t.Fatalf("tables delete --json: %v:\n%s", err, results[0].out)
	}
	if rep.Rows > int64(len(matched)) || results[0].failed == 0 && rep.Rows != int64(len(matched)) {
		t.Fatalf("the delete reports %d rows after %d failed runs; %d rows match", rep.Rows, results[0].failed, len(matched))
	}
	if left := e.waitingFiles(t); len(left) != 0 {
		t.Fatalf("files left in landing: %v", left)
	}
	st := e.read(t)
	checkRows(t, st, want)
	strays := len(st.strays)
	if e.proxy.Injected(s3fault.Forward) == 0 {
		t.Fatal("no fault was injected: the trial tested nothing")
	}

	tbl, err := e.maintenanceLake(t).LoadTable(context.Background(), e.table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Maintain(context.Background(), lake.MaintainOptions{Force: true, Orphans: true}); err != nil {
		t.Fatal(err)
	}
	st = e.read(t)
	checkRows(t, st, want)
	if len(st.strays) != 0 {
		t.Fatalf("after maintenance %d files are left that nothing references: %v", len(st.strays), head(st.strays))
	}
	t.Logf("%d runs (%d failed), %d faults injected, delete of %d rows (%d match), %d files left by failed runs",
		runs, failed, e.proxy.Injected(s3fault.Forward), rep.Rows, len(matched), strays)
	record("tables delete racing ingest and maintenance", runs, failed, e.proxy, len(st.rowIDs), strays)
}
