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
			// Not committed: the table references the files it did before.
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

// TestDeleteRacesIngestAndMaintenance: `tables delete` starts; once it
// writes its first rewritten file (the request held at the proxy), an
// ingest run loading new files and a `tables maintain` round start, and
// the delete goes on when the round, which compacts the delete's input
// files, has committed: the delete must plan again on the compacted files
// and commit among the ingest's appends. The delete runs through one fault
// proxy, the ingest and the round through another, both with lost
// responses and 500s on writes; a run that fails is run again. The new
// files' rows never match the delete's predicate, and those of the files
// loaded before are matched by it or not: afterwards the table holds every
// row of the new files, none of the old rows the predicate matches, and
// the other old rows, each exactly once (none lost, none brought back by
// the compaction of the delete's inputs, none doubled by an attempt whose
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

	// The delete's first rewritten file is held until the maintenance
	// round has committed; its response, and the next one's, is lost.
	held, release := make(chan struct{}), make(chan struct{})
	var holdOnce sync.Once
	hold := func() { holdOnce.Do(func() { close(held); <-release }) }
	kb, put := e.lakeBucket, http.MethodPut
	others := s3fault.StartT(t, e.srv.Endpoint, seed+1<<32)
	for _, r := range []s3fault.Rule{
		{Name: "held data file", Method: put, Bucket: kb, Key: "*/data/*", Action: s3fault.LoseResponse, Times: 2, Then: hold},
		{Name: "manifest 500", Method: put, Bucket: kb, Key: "*/metadata/*.avro", Action: s3fault.Fail,
			Status: http.StatusInternalServerError, Code: "InternalError", Prob: 0.5, Times: 3},
		{Name: "lost metadata", Method: put, Bucket: kb, Key: "*/metadata/v*.metadata.json", Action: s3fault.LoseResponse, Times: 1},
	} {
		e.proxy.Add(r)
	}
	for _, r := range []s3fault.Rule{
		{Name: "data file 500", Method: put, Bucket: kb, Key: "*/data/*", Action: s3fault.Fail,
			Status: http.StatusInternalServerError, Code: "InternalError", Prob: 0.2, Times: 6},
		{Name: "lost manifest", Method: put, Bucket: kb, Key: "*/metadata/*.avro", Action: s3fault.LoseResponse, Prob: 0.3, Times: 2},
		{Name: "lost metadata", Method: put, Bucket: kb, Key: "*/metadata/v*.metadata.json", Action: s3fault.LoseResponse, Prob: 0.3, Times: 2},
	} {
		others.Add(r)
	}

	timelakeBinary(t)
	type job struct {
		name         string
		cmd          func() *exec.Cmd
		runs, failed int
		out          string
		err          error
		done         chan struct{}
	}
	start := func(name string, cmd func() *exec.Cmd) *job {
		j := &job{name: name, cmd: cmd, done: make(chan struct{})}
		go func() {
			defer close(j.done)
			j.runs, j.failed, j.out, j.err = runUntilOK(j.cmd, 8)
		}()
		return j
	}
	del := start("tables delete", func() *exec.Cmd { return e.deleteCommand(t, e.proxy.URL, pred.args()...) })
	jobs := []*job{del}
	select {
	case <-held:
		jobs = append(jobs,
			start("ingest", func() *exec.Cmd { return e.ingestCommand(t, others.URL) }),
			start("tables maintain", func() *exec.Cmd { return e.command(t, others.URL, "tables", "maintain", e.table.String()) }))
		<-jobs[2].done
	case <-del.done:
	}
	close(release)
	runs, failed := 0, 0
	for _, j := range jobs {
		<-j.done
		if j.err != nil {
			t.Fatalf("%s: %v", j.name, j.err)
		}
		runs, failed = runs+j.runs, failed+j.failed
	}
	if len(jobs) == 1 {
		t.Fatalf("the delete ended without writing a file:\n%s", del.out)
	}
	var rep deleteReport
	if err := json.Unmarshal([]byte(del.out), &rep); err != nil {
		t.Fatalf("tables delete --json: %v:\n%s", err, del.out)
	}
	if rep.Rows > int64(len(matched)) || del.failed == 0 && rep.Rows != int64(len(matched)) {
		t.Fatalf("the delete reports %d rows after %d failed runs; %d rows match", rep.Rows, del.failed, len(matched))
	}
	if left := e.waitingFiles(t); len(left) != 0 {
		t.Fatalf("files left in landing: %v", left)
	}
	st := e.read(t)
	checkRows(t, st, want)
	e.checkDeleteAfterCompaction(t)
	strays := len(st.strays)
	injected := e.proxy.Injected(s3fault.Forward) + others.Injected(s3fault.Forward)

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
		runs, failed, injected, rep.Rows, len(matched), strays)
	record("tables delete racing ingest and maintenance", runs, failed, e.proxy, len(st.rowIDs), strays)
	recordFaults(others)
}

// checkDeleteAfterCompaction checks that the table's current ancestry
// holds one snapshot of a delete (an overwrite or delete without a batch
// id), committed after a compaction (a replace): the race the trial set
// up took place.
func (e *env) checkDeleteAfterCompaction(t *testing.T) {
	t.Helper()
	var out bytes.Buffer
	cmd := e.command(t, e.srv.Endpoint, "tables", "snapshots", e.table.String(), "--json")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("tables snapshots: %v", err)
	}
	var snaps []struct {
		Operation string  `json:"operation"`
		BatchID   *string `json:"batch_id"`
		State     string  `json:"state"`
	}
	if err := json.Unmarshal(out.Bytes(), &snaps); err != nil {
		t.Fatalf("tables snapshots --json: %v", err)
	}
	var ops []string // oldest first
	for _, s := range slices.Backward(snaps) {
		if s.State != "abandoned" && s.BatchID == nil {
			ops = append(ops, s.Operation)
		}
	}
	deletes := slices.IndexFunc(ops, func(op string) bool { return op == "overwrite" || op == "delete" })
	if n := len(slices.DeleteFunc(slices.Clone(ops), func(op string) bool { return op != "overwrite" && op != "delete" })); n != 1 ||
		!slices.Contains(ops[:deletes], "replace") {
		t.Fatalf("snapshots without a batch id, oldest first: %v; want one delete, after a compaction", ops)
	}
}
