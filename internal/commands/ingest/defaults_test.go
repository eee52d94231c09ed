package ingest_test

import (
	"strconv"
	"testing"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/settings"
)

// TestRegistryAgreesWithTheEngine: the registry, which links neither
// ingest nor the lake, declares the defaults ingest uses for a zero value
// and reads --partition by the rule the lake reads timelake.chunk by.
func TestRegistryAgreesWithTheEngine(t *testing.T) {
	for _, c := range []struct {
		spec *settings.Spec
		want string
	}{
		{&settings.Parallel.Spec, strconv.Itoa(ingest.DefaultParallel)},
		{&settings.FilesPerCommit.Spec, strconv.Itoa(ingest.DefaultFilesPerCommit)},
		{&settings.Partition.Spec, string(lake.Day)},
	} {
		if c.spec.Default != c.want {
			t.Errorf("--%s defaults to %q in the registry, %q in the engine", c.spec.Flag, c.spec.Default, c.want)
		}
	}
	if got, err := settings.MemoryBudget.Kind.Parse(settings.MemoryBudget.Default); err != nil || got != ingest.DefaultMemoryBudget {
		t.Errorf("--memory-budget defaults to %s (%d, %v), the engine to %d", settings.MemoryBudget.Default, got, err, ingest.DefaultMemoryBudget)
	}
	for _, o := range []string{lake.OutcomeLoaded, lake.OutcomeDuplicate, lake.OutcomeRejected, lake.OutcomeDeleted, lake.OutcomeRestored} {
		if _, err := settings.HistoryStatus.Kind.Parse(o); err != nil {
			t.Errorf("--status %s: %v", o, err)
		}
	}
	for _, s := range []string{"hour", "day", "month", "HOUR", " Day ", "", "week", "days", "1h"} {
		want, werr := lake.ParseGranularity(s)
		got, gerr := settings.Partition.Kind.Parse(s)
		if (werr == nil) != (gerr == nil) || string(want) != got || (werr != nil && werr.Error() != gerr.Error()) {
			t.Errorf("--partition %q: registry %q, %v; lake %q, %v", s, got, gerr, want, werr)
		}
	}
}
