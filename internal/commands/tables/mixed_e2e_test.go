package tables_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/commands/cmdutil"
)

// showProfiles is what the test reads of tables show --json.
type showProfiles struct {
	Profiles []struct {
		Name     string
		Match    []string
		Settings map[string]string
	}
	Maintenance map[string]string
	Duplicates  struct {
		ReadDedup bool `json:"read_dedup"`
		Rows      int64
	}
}

// TestTablesSourceProfilesAndCorrections: alter manages the profiles and
// read-dedup and refuses what would not work, show lists them and what
// compaction has left, profile exports one for gateways, maintain reports
// a retention.
func TestTablesSourceProfilesAndCorrections(t *testing.T) {
	landing, _ := copyLanding(t, "gateway-1/")
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh, "TIMELAKE_TABLE": "iot.readings", "LANDING_BUCKET": landing,
		"TIMELAKE_MAINTENANCE_BUDGET": "0"}
	mustRun(t, env, false, "ingest", "--series-key", "device_id")

	mustRun(t, env, false, "tables", "alter", "--set", "timelake.profile.berlin.match=site-berlin/",
		"--set", "timelake.profile.berlin.csv-delimiter=;", "--set", "timelake.read-dedup=true", "--set", "timelake.retention=400d")
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--set", "timelake.profile.munich.match=site-berlin/munich/"}, "both match the keys below"},
		{[]string{"--set", "timelake.profile.munich.csv-delimiter=;"}, "has no timelake.profile.munich.match"},
		{[]string{"--set", "timelake.profile.berlin.colour=red"}, `unknown profile setting "colour"`},
		{[]string{"--set", "timelake.profile.berlin.time-unit=hours"}, "expected s, ms, us or ns"},
		{[]string{"--set", "timelake.retention=5m"}, "timelake.retention"},
		{[]string{"--set", "timelake.on-error=skip"}, "expected file or skip-rows"},
		{[]string{"--set", "timelake.source-column=time"}, `column "time", chosen to hold each row's landing key (--source-column or timelake.source-column), is the table's time column`},
		{[]string{"--set", "timelake.source-column=device_id"}, "is the table's series key column"},
		{[]string{"--set", "timelake.load-time-column=device_id"}, "is the table's series key column"},
		{[]string{"--set", "timelake.source-column=temperature_c"}, "is double in the table, not string"},
		{[]string{"--set", "timelake.source-column=_src", "--set", "timelake.load-time-column=_src"}, "choose two names"},
	} {
		r := timelake(t, env, false, append([]string{"tables", "alter"}, tc.args...)...)
		if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, tc.says) {
			t.Errorf("alter %v: exit %d, %s", tc.args, r.code, r.errOut)
		}
	}

	mustRun(t, env, false, "tables", "alter", "--dry-run", "--set", "timelake.source-column=_source", "--set", "timelake.load-time-column=_loaded_at")

	show := decode[showProfiles](t, mustRun(t, env, false, "tables", "show", "--json"))
	if len(show.Profiles) != 1 || show.Profiles[0].Name != "berlin" || show.Profiles[0].Match[0] != "site-berlin/" ||
		show.Profiles[0].Settings["csv-delimiter"] != ";" || !show.Duplicates.ReadDedup || show.Duplicates.Rows != 0 {
		t.Errorf("show --json: %+v", show)
	}
	if _, listed := show.Maintenance["timelake.profile.berlin.match"]; listed {
		t.Error("a profile's property listed with the maintenance settings")
	}
	if out := mustRun(t, env, true, "tables", "show"); !strings.Contains(out, "berlin: match site-berlin/; csv-delimiter ;") ||
		!strings.Contains(out, "on: no series key and time has rows of two batches left") {
		t.Errorf("show on a terminal:\n%s", out)
	}

	exp := decode[struct {
		Format, Profile string
		TimeColumn      string `json:"time_column"`
		Settings        map[string]string
	}](t, mustRun(t, env, false, "tables", "profile", "berlin"))
	if exp.Format != "timelake-source-profile/1" || exp.Profile != "berlin" || exp.TimeColumn != "time" || exp.Settings["match"] != "site-berlin/" {
		t.Errorf("profile export: %+v", exp)
	}
	if r := timelake(t, env, false, "tables", "profile", "paris"); r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, `no source profile "paris"`) {
		t.Errorf("export of a profile the table lacks: %d %s", r.code, r.errOut)
	}

	rep := decode[struct {
		Retention *struct {
			Retention  string
			Partitions []string
		}
	}](t, mustRun(t, env, false, "tables", "maintain", "--dry-run", "--json"))
	if rep.Retention == nil || rep.Retention.Retention != "400d" || len(rep.Retention.Partitions) != 0 {
		t.Errorf("maintain --dry-run: %+v", rep.Retention)
	}

	mustRun(t, env, false, "tables", "alter", "--unset", "timelake.profile.berlin")
	show = decode[showProfiles](t, mustRun(t, env, false, "tables", "show", "--json"))
	if len(show.Profiles) != 0 {
		t.Errorf("after --unset timelake.profile.berlin: %+v", show.Profiles)
	}
}
