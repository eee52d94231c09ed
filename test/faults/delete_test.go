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
