package tables_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/commands/cmdutil"
)

// TestTablesCreateTooWide: a sample whose columns no table's manifests can
// carry (too many, or names too long) creates no table, the error naming
// the limit.
func TestTablesCreateTooWide(t *testing.T) {
	wh := filepath.Join(t.TempDir(), "lake")
	env := map[string]string{"TIMELAKE_WAREHOUSE": wh}
	for _, tc := range []struct {
		columns, nameLen int
		want             string
	}{
		{30_000, 0, "the file has 30001 columns, more than the 10000 columns a table may have"},
		{1_100, 1_000, "bytes a table's schema may have"},
	} {
		var b strings.Builder
		b.WriteString("time")
		for i := range tc.columns {
			name := "c" + strconv.Itoa(i)
			b.WriteString("," + name + strings.Repeat("x", max(0, tc.nameLen-len(name))))
		}
		b.WriteString("\n2026-01-05T10:00:00Z" + strings.Repeat(",1", tc.columns) + "\n")
		sample := filepath.Join(t.TempDir(), "wide.csv")
		if err := os.WriteFile(sample, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		r := timelake(t, env, false, "tables", "create", "iot.wide", "--from-file", sample)
		if r.code != cmdutil.ExitFailed || !strings.Contains(r.errOut, tc.want) || len(r.errOut) > 1000 {
			t.Errorf("%d columns: exit %d, stderr %.500q, want exit 1 and %q", tc.columns, r.code, r.errOut, tc.want)
		}
		if _, err := os.Stat(filepath.Join(wh, "iot", "wide")); !os.IsNotExist(err) {
			t.Errorf("%d columns: the table's folder: %v", tc.columns, err)
		}
	}
}
