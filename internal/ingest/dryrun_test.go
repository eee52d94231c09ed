package ingest

import (
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/lake"
)

// TestDryRunLoadedReason: another size is other content only for a file
// loaded uncompressed; a gzip file compressed again may hold the same.
func TestDryRunLoadedReason(t *testing.T) {
	plain := lake.BatchInfo{SnapshotID: 7, Summary: map[string]string{lake.SummarySourceSize: "100",
		lake.SummarySourceSHA256: "aa", lake.SummaryContentSHA256: "aa"}}
	gz := lake.BatchInfo{SnapshotID: 7, Summary: map[string]string{lake.SummarySourceSize: "100",
		lake.SummarySourceSHA256: "aa", lake.SummaryContentSHA256: "bb"}}
	for _, tc := range []struct {
		b    lake.BatchInfo
		size int64
		want string
	}{
		{plain, 100, "deletes it if it holds the content loaded"},
		{plain, 120, "of 100 bytes where the file now has 120: a run without --dry-run quarantines it"},
		{gz, 120, "deletes it if it holds the content loaded"},
	} {
		if got := dryRunLoadedReason(tc.b, tc.size); !strings.Contains(got, tc.want) {
			t.Errorf("size %d of %v: %q, want %q in it", tc.size, tc.b.Summary, got, tc.want)
		}
	}
}
