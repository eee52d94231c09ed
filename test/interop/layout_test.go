package interop

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/lake"
)

// coldDaySchema is a gateway's readings: one series per device.
var coldDaySchema = arrow.NewSchema([]arrow.Field{
	{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "device", Type: arrow.BinaryTypes.String},
	{Name: "reading", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// The cold day of TestColdDayLayoutReadByDuckDB: coldDaySeries devices,
// one reading a minute each over the whole day, in row groups of at most
// coldDayRowGroup rows (6 series of 1,440 rows each).
const (
	coldDaySeries   = 30
	coldDayRowGroup = 10_000
)

// TestColdDayLayoutReadByDuckDB: a day loaded in small batches and
// compacted cold is one data file whose row groups, as DuckDB reads them
// (parquet_metadata), hold whole series, at most
// write.parquet.row-group-limit rows, with statistics on every column
// chunk that leave one row group for one series over one hour; DuckDB
// reads every row back and answers such a query exactly.
func TestColdDayLayoutReadByDuckDB(t *testing.T) {
	ctx := context.Background()
	w := localWarehouse(t)
	name := lake.TableName{Namespace: "gen", Name: "coldday"}
	tbl, err := w.lake.CreateTable(ctx, name, coldDaySchema,
		lake.CreateSpec{TimeColumn: "time", SeriesKey: []string{"device"}, Partition: lake.Day})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.SetProperties(ctx, map[string]string{table.ParquetRowGroupLimitKey: fmt.Sprint(coldDayRowGroup)}, nil); err != nil {
		t.Fatal(err)
	}
	// 12 batches of two hours of every series, as gateways' files arrive.
	day := genStart.Truncate(24 * time.Hour)
	for b := range 12 {
		var rows []Row
		for m := b * 120; m < (b+1)*120; m++ {
			for d := range coldDaySeries {
				rows = append(rows, Row{day.Add(time.Duration(m) * time.Minute).UnixMicro(),
					fmt.Sprintf("dev-%02d", d), float64((m*7+d)%50) / 10})
			}
		}
		appendRows(t, tbl, fmt.Sprintf("gw/%02d.csv", b), rows, lake.AppendOptions{})
	}
	if err := tbl.SetProperties(ctx, map[string]string{lake.PropCompactColdAfter: "1ms"}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if rep, err := tbl.Maintain(ctx, lake.MaintainOptions{}); err != nil || len(rep.Compacted.Groups) != 1 {
		t.Fatalf("maintenance: %+v, %v; want the day compacted", rep.Compacted, err)
	}
	tasks, err := tbl.Iceberg().Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("%d live data files after the cold compaction, want 1", len(tasks))
	}
	path, err := LocalFile(ctx, nil, tasks[0].File.FilePath(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db := duckDB(t)
	groups := duckRowGroups(t, db, path)
	const seriesRows = 24 * 60
	perGroup := coldDayRowGroup / seriesRows
	if want := (coldDaySeries + perGroup - 1) / perGroup; len(groups) != want {
		t.Errorf("%d row groups, want %d (%d whole series each)", len(groups), want, perGroup)
	}
	for i, g := range groups {
		if g.rows > coldDayRowGroup || g.rows%seriesRows != 0 {
			t.Errorf("row group %d: %d rows, want whole series of %d rows, at most %d", i, g.rows, seriesRows, coldDayRowGroup)
		}
		for _, col := range []string{"time", "device", "reading"} {
			if !g.stats[col] {
				t.Errorf("row group %d: column %s has no min and max", i, col)
			}
		}
	}

	// Which row group each row is in, from the file's row numbers: every
	// series in exactly one.
	src := "read_parquet(" + quoteString(path) + ", hive_partitioning = false, file_row_number = true)"
	rowGroup := "CASE"
	for i, g := range groups {
		rowGroup += fmt.Sprintf(" WHEN file_row_number < %d THEN %d", g.firstRow+g.rows, i)
	}
	q := "SELECT device, count(*), count(DISTINCT " + rowGroup + " END) FROM " + src + " GROUP BY device ORDER BY device"
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	series := 0
	for rows.Next() {
		var device string
		var n, in int64
		if err := rows.Scan(&device, &n, &in); err != nil {
			t.Fatal(err)
		}
		series++
		if n != seriesRows || in != 1 {
			t.Errorf("series %s: %d rows in %d row groups, want %d rows in one", device, n, in, seriesRows)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if series != coldDaySeries {
		t.Errorf("DuckDB reads %d series, want %d", series, coldDaySeries)
	}

	// One series over one hour: the statistics leave one row group, and
	// DuckDB counts the hour's rows.
	from, to := day.Add(12*time.Hour), day.Add(13*time.Hour)
	for _, device := range []string{"dev-00", "dev-07", "dev-29"} {
		var left []int
		for i, g := range groups {
			if g.minDevice <= device && device <= g.maxDevice && g.minTime < to.UnixMicro() && g.maxTime >= from.UnixMicro() {
				left = append(left, i)
			}
		}
		if len(left) != 1 {
			t.Errorf("%s over one hour: the statistics leave row groups %v, want one", device, left)
		}
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+src+" WHERE device = ? AND time >= ? AND time < ?",
			device, from, to).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 60 {
			t.Errorf("%s over one hour: DuckDB counts %d rows, want 60", device, n)
		}
	}
}

// duckRowGroup is one row group as DuckDB's parquet_metadata() reads it:
// its rows, the first row's number in the file, the bounds of its device
// and time chunks (times in microseconds), and whether each column chunk
// has a minimum and a maximum.
type duckRowGroup struct {
	rows, firstRow       int64
	minDevice, maxDevice string
	minTime, maxTime     int64
	stats                map[string]bool
}

// duckRowGroups reads the row groups of a Parquet file with DuckDB.
func duckRowGroups(t *testing.T, db *sql.DB, path string) []duckRowGroup {
	t.Helper()
	rows, err := db.Query("SELECT row_group_id, row_group_num_rows, path_in_schema, stats_min_value, stats_max_value, "+
		"stats_min_value IS NOT NULL AND stats_max_value IS NOT NULL FROM parquet_metadata(?) ORDER BY row_group_id, column_id", path)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []duckRowGroup
	for rows.Next() {
		var id, n int64
		var col string
		var lo, hi sql.NullString
		var has bool
		if err := rows.Scan(&id, &n, &col, &lo, &hi, &has); err != nil {
			t.Fatal(err)
		}
		if int(id) == len(out) {
			g := duckRowGroup{rows: n, stats: map[string]bool{}}
			if id > 0 {
				g.firstRow = out[id-1].firstRow + out[id-1].rows
			}
			out = append(out, g)
		}
		g := &out[id]
		g.stats[col] = has
		switch col {
		case "device":
			g.minDevice, g.maxDevice = lo.String, hi.String
		case "time":
			g.minTime, g.maxTime = duckTimestamp(t, lo.String), duckTimestamp(t, hi.String)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// duckTimestamp parses a timestamp as parquet_metadata() prints it.
func duckTimestamp(t *testing.T, s string) int64 {
	t.Helper()
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999Z07:00", "2006-01-02 15:04:05.999999"} {
		if ts, err := time.Parse(layout, s); err == nil {
			return ts.UnixMicro()
		}
	}
	t.Fatalf("parquet_metadata timestamp %q: expected YYYY-MM-DD hh:mm:ss[.ffffff][+zz]", s)
	return 0
}
