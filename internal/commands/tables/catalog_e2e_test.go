package tables_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/testutil/catalogtest"
)

// TestCommandsThroughRESTCatalog: with --catalog rest every command that
// opens the lake goes through the catalog: ingest creates the table there
// and loads the files (files re-sent under their keys load nothing), the
// tables commands list, show, alter, maintain and expire it, and the
// landing commands look keys up in it.
func TestCommandsThroughRESTCatalog(t *testing.T) {
	srv := catalogtest.FromEnv(t)
	landing, keys := copyLanding(t, "")
	env := map[string]string{
		"AWS_ENDPOINT_URL_S3": srv.S3Endpoint, "AWS_REGION": srv.Region,
		"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey,
		"TIMELAKE_WAREHOUSE": srv.NewWarehouse(t), "TIMELAKE_TABLE": "iot.readings", "LANDING_BUCKET": landing,
		"TIMELAKE_CATALOG": "rest", "TIMELAKE_CATALOG_URI": srv.URI, "TIMELAKE_CATALOG_CREDENTIAL": srv.Credential(),
		"TIMELAKE_MAINTENANCE_BUDGET": "0",
	}
	mustRun(t, env, false, "ingest", "--series-key", "device_id")
	if got := pipeColumn(t, mustRun(t, env, false, "tables", "batches"), 0); !slices.Equal(sorted(got), keys) {
		t.Errorf("tables batches listed %v, want %v", got, keys)
	}

	// Re-sent: already loaded, and the table's data does not change; the
	// duplicates enter its outcome log, through the catalog.
	data := func() string {
		t.Helper()
		var show map[string]json.RawMessage
		if err := json.Unmarshal([]byte(mustRun(t, env, false, "tables", "show", "--json")), &show); err != nil {
			t.Fatal(err)
		}
		return string(show["current_snapshot"]) + string(show["totals"]) + string(show["schema"]) + string(show["partition_spec"])
	}
	before := data()
	landing2, _ := copyLanding(t, "")
	env["LANDING_BUCKET"] = landing2
	out := mustRun(t, env, false, "ingest", "--json")
	if strings.Count(out, `"status":"already-loaded"`) != len(keys) {
		t.Errorf("re-sent files: %s", out)
	}
	if after := data(); after != before {
		t.Errorf("the table's data changed when re-sent files were loaded:\n%s\n%s", before, after)
	}
	if dups := pipeColumn(t, mustRun(t, env, false, "tables", "history", "--status", "duplicate"), 2); !slices.Equal(sorted(dups), keys) {
		t.Errorf("tables history --status duplicate: %v, want %v", dups, keys)
	}

	out = mustRun(t, env, true, "tables", "show")
	for _, want := range []string{"Catalog:           REST catalog " + srv.URI, "Metadata file:     " + env["TIMELAKE_WAREHOUSE"] + "/iot/readings/metadata/v",
		"\nTotals\n  2100 rows in 7 data files, "} {
		if !strings.Contains(out, want) {
			t.Errorf("tables show lacks %q:\n%s", want, out)
		}
	}
	if got := pipeColumn(t, mustRun(t, env, false, "tables", "list"), 0); !slices.Equal(got, []string{"iot.readings"}) {
		t.Errorf("tables list: %v", got)
	}
	mustRun(t, env, false, "tables", "alter", "iot.readings", "--set", "timelake.snapshot-retention=1s", "--set", "timelake.min-snapshots=1")
	mustRun(t, env, false, "tables", "maintain", "iot.readings", "--orphans")
	mustRun(t, env, false, "tables", "expire", "iot.readings", "--older-than", "1s", "--retain-last", "1")
	// The keys stay loaded (in the load history, in the table's _timelake/ folder).
	out = mustRun(t, env, false, "tables", "batch", "iot.readings", keys[0], "--json")
	if !strings.Contains(out, `"loaded":true`) {
		t.Errorf("%s after expiry: %s", keys[0], out)
	}
	if r := timelake(t, env, false, "landing", "rejected"); r.code != 0 {
		t.Errorf("landing rejected: exit %d: %s", r.code, r.errOut)
	}
}
