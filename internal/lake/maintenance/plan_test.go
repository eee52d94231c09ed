package maintenance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// liveFiles are n data files of partition part, each of size bytes and
// rows rows, committed a second apart from at.
func liveFiles(t *testing.T, part string, n int, size, rows int64, at time.Time) []File {
	t.Helper()
	var out []File
	for i := range n {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
			fmt.Sprintf("s3://b/t/data/%s/%d.parquet", part, i), iceberg.ParquetFile, nil, nil, nil, rows, size)
		if err != nil {
			t.Fatal(err)
		}
		seq := int64(i + 1)
		e := iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &seq, &seq, &seq, b.Build())
		out = append(out, File{Entry: e, Partition: part, Committed: at.Add(time.Duration(i) * time.Second)})
	}
	return out
}

// TestPlanCompaction: a live partition's files merge once a size tier
// holds compact-min-files of them, a cold partition's small files merge
// whatever their tiers, newest partition first, and a group whose rewrite
// does not fit the time left is cut to the oldest files that fit.
func TestPlanCompaction(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	s := CompactSettingsOf(nil, 0, 0, 0)
	live := liveFiles(t, "d=2", 4, 10<<10, 100, now.Add(-time.Minute))
	cold := liveFiles(t, "d=1", 2, 1<<20, 1000, now.Add(-2*time.Hour))

	groups, deferred := PlanCompaction(append(live[:3:3], cold...), 0, s, now, 0, nil)
	if deferred != 0 || len(groups) != 1 || groups[0].Partition != "d=1" || groups[0].Reason != "cold" || groups[0].FilesIn != 2 {
		t.Fatalf("three files of a live tier and a cold partition: %+v, %d deferred; want the cold partition's group", groups, deferred)
	}
	groups, _ = PlanCompaction(append(live, cold...), 0, s, now, 0, nil)
	if len(groups) != 2 || groups[0].Partition != "d=2" || groups[0].Reason != "tiered" || groups[0].Tier != 0 ||
		groups[0].FilesIn != 4 || groups[0].BytesIn != 4*10<<10 || groups[0].Rows != 400 || len(groups[0].Inputs) != 4 {
		t.Fatalf("four files of a live tier: %+v; want them merged first, then the cold partition", groups)
	}
	// Within the bytes of one group, the first group is planned, the next deferred.
	if groups, deferred := PlanCompaction(append(live, cold...), 0, s, now, 1, nil); len(groups) != 1 || deferred != 1 {
		t.Fatalf("bounded bytes: %d groups, %d deferred; want 1 and 1", len(groups), deferred)
	}
	// A rewrite of at most 300 rows fits: the live group is cut to its
	// three oldest files, the cold one does not fit at all.
	fits := func(g Group) bool { return g.Rows <= 300 }
	groups, deferred = PlanCompaction(append(live, cold...), 0, s, now, 0, fits)
	if len(groups) != 1 || groups[0].FilesIn != 3 || groups[0].Rows != 300 || deferred != 2 ||
		groups[0].Inputs[2].FilePath() != live[2].Entry.DataFile().FilePath() {
		t.Fatalf("time for 300 rows: %+v, %d deferred; want the live group's three oldest files, 2 deferred", groups, deferred)
	}
	if why := IdleReason(live[:3], 0, s); !strings.Contains(why, "3 files below 8MiB in 1 partition") {
		t.Errorf("idle: %q", why)
	}
	if why := IdleReason(nil, 0, s); why != "the table has no data files" {
		t.Errorf("idle without files: %q", why)
	}
}

// TestPackGroups: groups stay within the target size, and within the
// files the merge streams.
func TestPackGroups(t *testing.T) {
	at := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	if gs := PackGroups("d=1", "cold", 0, liveFiles(t, "d=1", 5, 3<<20, 100, at), 8<<20); len(gs) != 3 || gs[0].FilesIn != 2 || gs[2].FilesIn != 1 {
		t.Fatalf("five files of 3 MiB, target 8 MiB: %+v; want 2, 2 and 1", gs)
	}
	streamed := liveFiles(t, "d=1", MergeMaxStreams+2, 1<<10, MergePoolFileRows+1, at)
	if gs := PackGroups("d=1", "cold", 0, streamed, 1<<30); len(gs) != 2 || gs[0].FilesIn != MergeMaxStreams || gs[1].FilesIn != 2 {
		t.Fatalf("%d streamed files: %+v; want groups of %d and 2", len(streamed), gs, MergeMaxStreams)
	}
	if SizeTier(1, 4) != 0 || SizeTier(TierBase, 4) != 1 || SizeTier(4*TierBase, 4) != 2 {
		t.Error("size tiers")
	}
}
