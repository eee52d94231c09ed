package tables_test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// TestTablesLostResponseOnLoadHistory: through the fault proxy, the
// response to the conditional create of the load history segment is lost
// after the segment landed (the SDK's retry reads 412). tables expire and
// tables maintain recognise their own segment and exit 0; every key is
// listed once, the expired ones from the load history.
func TestTablesLostResponseOnLoadHistory(t *testing.T) {
	srv := s3test.FromEnv(t)
	p := s3fault.StartT(t, srv.Endpoint, 1)
	landing, keys := copyLanding(t, "")
	env := map[string]string{
		"TIMELAKE_WAREHOUSE":          "s3://" + srv.NewBucket(t) + "/warehouse",
		"TIMELAKE_TABLE":              "iot.readings",
		"LANDING_BUCKET":              landing,
		"TIMELAKE_MAINTENANCE_BUDGET": "0", // the table as ingest loaded it, not compacted
		"AWS_ENDPOINT_URL_S3":         p.URL,
		"AWS_REGION":                  srv.Region,
		"AWS_ACCESS_KEY_ID":           srv.AccessKey,
		"AWS_SECRET_ACCESS_KEY":       srv.SecretKey,
	}
	mustRun(t, env, false, "ingest", "--series-key", "device_id")
	time.Sleep(5 * time.Millisecond) // every snapshot is older than --older-than 1ms
	lose := func() {
		p.Clear()
		p.Add(s3fault.Rule{Name: "lost load history response", Method: http.MethodPut, Key: "*/_load-history-*",
			Action: s3fault.LoseResponse, Times: 1})
	}
	sources := func() (snapshot, history []string) {
		for _, b := range decode[[]batchJSON](t, mustRun(t, env, false, "tables", "batches", "--json")) {
			switch b.Source {
			case "snapshot":
				snapshot = append(snapshot, b.BatchID)
			case "load-history":
				history = append(history, b.BatchID)
			default:
				t.Errorf("batch %+v", b)
			}
		}
		return snapshot, history
	}

	lose()
	rep := decode[struct {
		Expired        int `json:"expired"`
		KeysRemembered int `json:"keys_remembered"`
	}](t, mustRun(t, env, false, "tables", "expire", "--older-than", "1ms", "--retain-last", "2", "--json"))
	if n := p.Injected(s3fault.LoseResponse); n != 1 {
		t.Fatalf("expire: %d responses lost, want 1", n)
	}
	if rep.Expired != len(keys)-2 || rep.KeysRemembered != rep.Expired {
		t.Fatalf("expire: %+v, want %d expired and remembered", rep, len(keys)-2)
	}
	snap, hist := sources()
	if all := sorted(append(slices.Clone(snap), hist...)); len(snap) != 2 || !slices.Equal(all, keys) {
		t.Fatalf("after expire: from the snapshots %v, from the load history %v; want the %d keys once, 2 in snapshots", snap, hist, len(keys))
	}

	// Maintenance's expiry of the snapshots left, under the same fault.
	mustRun(t, env, false, "tables", "alter", "--set", "timelake.snapshot-retention=1ms", "--set", "timelake.min-snapshots=1")
	time.Sleep(5 * time.Millisecond)
	lose()
	mrep := decode[struct {
		Expiry *struct{ Expired int }
	}](t, mustRun(t, env, false, "tables", "maintain", "--json"))
	if n := p.Injected(s3fault.LoseResponse); n != 2 {
		t.Fatalf("maintain: %d responses lost in all, want 2", n)
	}
	if mrep.Expiry == nil || mrep.Expiry.Expired == 0 {
		t.Fatalf("maintain: %+v, want snapshots expired", mrep)
	}
	snap, hist = sources()
	if all := sorted(append(slices.Clone(snap), hist...)); !slices.Equal(all, keys) || len(hist) < len(keys)-1 {
		t.Fatalf("after maintain: from the snapshots %v, from the load history %v; want the %d keys once", snap, hist, len(keys))
	}

	// Ingest's own maintenance round after a load, under the same fault:
	// not stopped. A file loaded first without maintenance gives it a
	// snapshot with a batch id to expire.
	b, err := os.ReadFile(filepath.Join(examples, "gateway-1", "20260105T1000.csv"))
	if err != nil {
		t.Fatal(err)
	}
	land := func(hour string) {
		t.Helper()
		key := "gateway-1/20260105T" + hour + "00.csv"
		body := strings.ReplaceAll(string(b), "T10:", "T"+hour+":")
		if err := os.WriteFile(filepath.Join(landing, filepath.FromSlash(key)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		keys = sorted(append(keys, key))
	}
	land("12")
	mustRun(t, env, false, "ingest")
	land("13")
	delete(env, "TIMELAKE_MAINTENANCE_BUDGET")
	time.Sleep(5 * time.Millisecond)
	lose()
	ing := decode[struct {
		Loaded      int
		Maintenance *struct {
			SnapshotsExpired int    `json:"snapshots_expired"`
			KeysRemembered   int    `json:"keys_remembered"`
			Error            string `json:"error"`
		}
	}](t, mustRun(t, env, false, "ingest", "--json"))
	if n := p.Injected(s3fault.LoseResponse); n != 3 {
		t.Fatalf("ingest: %d responses lost in all, want 3", n)
	}
	if ing.Loaded != 1 || ing.Maintenance == nil || ing.Maintenance.Error != "" || ing.Maintenance.KeysRemembered == 0 {
		t.Fatalf("ingest: %+v (maintenance %+v), want the file loaded and keys remembered", ing, ing.Maintenance)
	}
	snap, hist = sources()
	if all := sorted(append(slices.Clone(snap), hist...)); !slices.Equal(all, keys) {
		t.Fatalf("after ingest: from the snapshots %v, from the load history %v; want the %d keys once", snap, hist, len(keys))
	}
}
