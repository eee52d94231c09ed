package tables

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// Fixtures (testdata/*.metadata.json) are real metadata written by ingest
// from examples/landing, with the location set to
// s3://example-lake/warehouse and the commit times set to fixed values:
// created (v1, no snapshots), ingested (v7, six appends), rolledback (v8,
// the last append rolled back).
func fixture(t *testing.T, name string) table.Metadata {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	meta, err := table.ParseMetadataBytes(b)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return meta
}

var readings = lake.TableName{Namespace: "iot", Name: "readings"}

const metaLoc = "s3://example-lake/warehouse/iot/readings/metadata/v8.metadata.json"

// checkGolden compares got with testdata/golden/name, or rewrites it with
// -update. got must be a JSON document.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	if !json.Valid(got) {
		t.Fatalf("%s: output is not JSON:\n%s", name, got)
	}
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

// dataFiles are the six files of the ingested fixture: five in the
// 2026-01-05 partition and one in 2026-01-06, one per snapshot.
func dataFiles(t *testing.T, meta table.Metadata) []DataFileEntry {
	t.Helper()
	day := func(y, m, d int) int32 {
		return int32(time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	}
	loc := "s3://example-lake/warehouse/iot/readings/data/"
	var out []DataFileEntry
	for i, s := range meta.Snapshots() {
		d, part := day(2026, 1, 5), "time_day=2026-01-05/"
		if i == 5 {
			d, part = day(2026, 1, 6), "time_day=2026-01-06/"
		}
		b, err := iceberg.NewDataFileBuilder(meta.PartitionSpec(), iceberg.EntryContentData,
			loc+part+"00000-0-"+string(rune('f'-i))+"-00001.parquet", iceberg.ParquetFile,
			map[int]any{1000: d}, nil, nil, 300, summaryInt(s.Summary.Properties, "added-files-size"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, DataFileEntry{SnapshotID: s.SnapshotID, File: b.Build()})
	}
	return out
}

// batchStatusIn answers `tables batch` from meta's snapshots alone.
func batchStatusIn(meta table.Metadata, id string) BatchStatus {
	b, ok := lake.FindBatchIn(meta, id)
	return BuildBatchStatus("iot.readings", id, b, ok)
}

// loadHistory is a load history for the fixtures, newest first
// (LoadHistory.Records): two files whose snapshots expired, one of them
// gzipped, and an older load of a key a snapshot still carries (listed
// from the snapshot).
var loadHistory = []lake.LoadRecord{
	{Key: "gateway-1/20260105T0900.csv", Size: 9311, SHA256: "5f0c7e5b2b0f4ad1c5a4ff1e0e7c1b2f9a6c3d2e1f0a9b8c7d6e5f4a3b2c1d0e",
		Rows: 300, SnapshotID: 3116208411237140001, LoadedAt: time.Date(2026, 1, 5, 10, 28, 41, 0, time.UTC)},
	{Key: "gateway-2/20260105T0900.csv.gz", Size: 2870, SHA256: "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9",
		ContentSHA256: "99887766554433221100ffeeddccbbaa99887766554433221100ffeeddccbbaa",
		Rows:          300, SnapshotID: 3116208411237140002, LoadedAt: time.Date(2026, 1, 5, 9, 58, 41, 0, time.UTC)},
	{Key: "gateway-1/20260105T1000.csv", Size: 9311, Rows: 300, SnapshotID: 3116208411237140000,
		LoadedAt: time.Date(2026, 1, 5, 9, 48, 41, 0, time.UTC)},
}

// maintained is a round of maintenance as Table.Maintain reports it: a
// tiered compaction group, expired snapshots and two orphan files removed,
// on a table whose properties set two settings.
func maintained() lake.MaintainReport {
	return lake.MaintainReport{
		Settings: lake.MaintenanceSettingsOf(iceberg.Properties{lake.PropAutoMaintain: "true",
			lake.PropSnapshotRetention: "1h", table.MetadataPreviousVersionsMaxKey: "5"}),
		Compacted: lake.CompactResult{SnapshotID: 2798769066474224232, Version: 9, Groups: []lake.CompactionGroup{
			{Partition: "time_day=2026-01-05", Reason: "tiered", FilesIn: 5, BytesIn: 22922, Rows: 1500, FilesOut: 1, BytesOut: 12025},
			{Partition: "time_day=2026-01-04", Reason: "cold", FilesIn: 3, BytesIn: 3 << 20, Rows: 90000, FilesOut: 1, BytesOut: 1 << 20},
		}},
		Expired: lake.ExpireResult{Expired: make([]lake.ExpiredSnapshot, 4), Kept: 3, Remembered: 4, FilesDeleted: 13, Version: 10},
		Orphans: &lake.OrphanResult{Bytes: 6144, Young: 1,
			Files: []string{"data/time_day=2026-01-05/00000-0-dead-00001.parquet", "metadata/snap-1-dead.avro"}},
		Took: 1250 * time.Millisecond,
	}
}

// plannedOnly is a dry run on a table of another writer whose settings do
// not enable maintenance, out of budget before the orphan check.
func plannedOnly() lake.MaintainReport {
	return lake.MaintainReport{
		Settings: lake.MaintenanceSettingsOf(iceberg.Properties{}),
		Compacted: lake.CompactResult{Version: 8, Groups: []lake.CompactionGroup{
			{Partition: "time_day=2026-01-05", Reason: "tiered", FilesIn: 5, BytesIn: 22922, Rows: 1500},
		}},
		Expired: lake.ExpireResult{Expired: make([]lake.ExpiredSnapshot, 2), Kept: 4, Version: 8},
		Pending: true, Took: 300 * time.Millisecond,
	}
}

// idle is a round with nothing to compact, groups left by the round's
// byte bound on another, and orphans not due.
func idle(deferred int) lake.MaintainReport {
	checked := time.Date(2026, 1, 5, 10, 30, 0, 0, time.UTC)
	rep := lake.MaintainReport{
		Settings:  lake.MaintenanceSettingsOf(iceberg.Properties{lake.PropAutoMaintain: "true"}),
		Compacted: lake.CompactResult{Version: 7, Idle: "every data file is at least 8MiB (timelake.target-file-size)"},
		Expired:   lake.ExpireResult{Kept: 3, Version: 7},
		Took:      200 * time.Millisecond, OrphansCheckedAt: checked, OrphansNext: checked.Add(lake.OrphanCheckInterval),
	}
	if deferred > 0 {
		rep.Compacted = lake.CompactResult{Version: 7, SnapshotID: 11, Deferred: deferred, Groups: []lake.CompactionGroup{
			{Partition: "time_day=2026-01-05", Reason: "tiered", FilesIn: 5, BytesIn: 22922, Rows: 1500, FilesOut: 1, BytesOut: 12025}}}
	}
	return rep
}

// round is rep as Table.Maintain returns it for table, dryRun, with the
// metadata version after the round and its error.
func round(table string, dryRun bool, rep lake.MaintainReport, version int, err error) lake.MaintainReport {
	ns, name, _ := strings.Cut(table, ".")
	rep.Table, rep.DryRun, rep.MetadataVersion = lake.TableName{Namespace: ns, Name: name}, dryRun, version
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}

// altered is `tables alter` setting two maintenance settings (one to the
// value it had), and removing one Iceberg property and one not set.
func altered(dryRun bool) AlterReport {
	before := iceberg.Properties{lake.PropAutoMaintain: "true", lake.PropMinSnapshots: "20", table.MetadataPreviousVersionsMaxKey: "5"}
	set := map[string]string{lake.PropSnapshotRetention: "1s", lake.PropAutoMaintain: "true", lake.PropMinSnapshots: "1"}
	unset := []string{"history.expire.max-snapshot-age-ms", table.MetadataPreviousVersionsMaxKey}
	return BuildAlterReport("iot.readings", dryRun, 9, before, applied(before, set, unset), set, unset)
}

func TestRender(t *testing.T) {
	ingested, rolledback, created := fixture(t, "ingested"), fixture(t, "rolledback"), fixture(t, "created")
	since := time.Date(2026, 1, 5, 11, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		render func(Output) error
		golden string
		tty    string
		pipe   string
	}{
		{
			name: "list",
			render: func(o Output) error {
				return RenderList(o, "s3://example-lake/warehouse", []TableRow{
					BuildTableRow(readings, 8, rolledback),
					BuildTableRow(lake.TableName{Namespace: "iot", Name: "empty"}, 1, created),
					{Table: "iot.broken", Error: "table iot.broken: table format is newer than this timelake understands"},
				})
			},
			golden: "list.json",
			tty: `TABLE         ROWS  FILES      SIZE  LAST COMMIT (UTC)               SNAPSHOT  VERSION
iot.readings  1500      5  22.4 KiB  2026-01-05 11:38:41  8982326459123165011        8
iot.empty        0      0       0 B  -                                      -        1
iot.broken       -      -         -  -                                      -        -
error: iot.broken: table iot.broken: table format is newer than this timelake understands
`,
			pipe: "table\trows\tdata_files\tsize_bytes\tlast_commit_at\tsnapshot_id\tmetadata_version\terror\n" +
				"iot.readings\t1500\t5\t22922\t2026-01-05T11:38:41.685Z\t8982326459123165011\t8\t\n" +
				"iot.empty\t0\t0\t0\t\t\t1\t\n" +
				"iot.broken\t\t\t\t\t\t\ttable iot.broken: table format is newer than this timelake understands\n",
		},
		{
			name:   "list empty",
			render: func(o Output) error { return RenderList(o, "s3://example-lake/warehouse", []TableRow{}) },
			golden: "list-empty.json",
			tty:    "no tables in s3://example-lake/warehouse\n",
			pipe:   "table\trows\tdata_files\tsize_bytes\tlast_commit_at\tsnapshot_id\tmetadata_version\terror\n",
		},
		{
			name: "snapshots after rollback",
			render: func(o Output) error {
				return RenderSnapshots(o, "iot.readings", BuildSnapshotRows(rolledback, time.Time{}, 0))
			},
			golden: "snapshots.json",
			tty: `           SNAPSHOT               PARENT  COMMITTED (UTC)      OPERATION  +ROWS  +FILES    +SIZE  STATE      BATCH ID
6732267319869248205  8982326459123165011  2026-01-05 11:58:41  append       300       1  4.6 KiB  abandoned  gateway-3/20260106T1100.parquet
8982326459123165011  2512617679824841063  2026-01-05 11:38:41  append       300       1  4.6 KiB  current    gateway-3/20260105T1000.parquet
2512617679824841063  4914480830112302143  2026-01-05 11:18:41  append       300       1  4.2 KiB  ancestor   gateway-2/20260105T1100.csv
4914480830112302143  7803464101019441819  2026-01-05 10:58:41  append       300       1  4.6 KiB  ancestor   gateway-2/20260105T1000.csv.gz
7803464101019441819  1214661719074243850  2026-01-05 10:38:41  append       300       1  4.5 KiB  ancestor   gateway-1/20260105T1100.csv
1214661719074243850                    -  2026-01-05 10:18:41  append       300       1  4.5 KiB  ancestor   gateway-1/20260105T1000.csv
`,
			pipe: "snapshot_id\tparent_id\tcommitted_at\toperation\tadded_rows\tadded_files\tadded_bytes\tstate\tbatch_id\n" +
				"6732267319869248205\t8982326459123165011\t2026-01-05T11:58:41.822Z\tappend\t300\t1\t4747\tabandoned\tgateway-3/20260106T1100.parquet\n" +
				"8982326459123165011\t2512617679824841063\t2026-01-05T11:38:41.685Z\tappend\t300\t1\t4686\tcurrent\tgateway-3/20260105T1000.parquet\n" +
				"2512617679824841063\t4914480830112302143\t2026-01-05T11:18:41.548Z\tappend\t300\t1\t4307\tancestor\tgateway-2/20260105T1100.csv\n" +
				"4914480830112302143\t7803464101019441819\t2026-01-05T10:58:41.411Z\tappend\t300\t1\t4692\tancestor\tgateway-2/20260105T1000.csv.gz\n" +
				"7803464101019441819\t1214661719074243850\t2026-01-05T10:38:41.274Z\tappend\t300\t1\t4580\tancestor\tgateway-1/20260105T1100.csv\n" +
				"1214661719074243850\t\t2026-01-05T10:18:41.137Z\tappend\t300\t1\t4657\tancestor\tgateway-1/20260105T1000.csv\n",
		},
		{
			name: "snapshots since and limit",
			render: func(o Output) error {
				return RenderSnapshots(o, "iot.readings", BuildSnapshotRows(ingested, since, 2))
			},
			golden: "snapshots-since-limit.json",
			tty: `           SNAPSHOT               PARENT  COMMITTED (UTC)      OPERATION  +ROWS  +FILES    +SIZE  STATE     BATCH ID
6732267319869248205  8982326459123165011  2026-01-05 11:58:41  append       300       1  4.6 KiB  current   gateway-3/20260106T1100.parquet
8982326459123165011  2512617679824841063  2026-01-05 11:38:41  append       300       1  4.6 KiB  ancestor  gateway-3/20260105T1000.parquet
`,
			pipe: "snapshot_id\tparent_id\tcommitted_at\toperation\tadded_rows\tadded_files\tadded_bytes\tstate\tbatch_id\n" +
				"6732267319869248205\t8982326459123165011\t2026-01-05T11:58:41.822Z\tappend\t300\t1\t4747\tcurrent\tgateway-3/20260106T1100.parquet\n" +
				"8982326459123165011\t2512617679824841063\t2026-01-05T11:38:41.685Z\tappend\t300\t1\t4686\tancestor\tgateway-3/20260105T1000.parquet\n",
		},
		{
			name: "snapshots none",
			render: func(o Output) error {
				return RenderSnapshots(o, "iot.empty", BuildSnapshotRows(created, time.Time{}, 0))
			},
			golden: "snapshots-empty.json",
			tty:    "no snapshots in iot.empty\n",
			pipe:   "snapshot_id\tparent_id\tcommitted_at\toperation\tadded_rows\tadded_files\tadded_bytes\tstate\tbatch_id\n",
		},
		{
			name: "batches after rollback",
			render: func(o Output) error {
				return RenderBatches(o, "iot.readings", BuildBatchRows(rolledback, nil, BatchFilter{}))
			},
			golden: "batches.json",
			tty: `BATCH ID                                    SNAPSHOT  COMMITTED (UTC)      ROWS  FILES     SIZE  FROM
gateway-3/20260105T1000.parquet  8982326459123165011  2026-01-05 11:38:41   300      1  4.6 KiB  snapshot
gateway-2/20260105T1100.csv      2512617679824841063  2026-01-05 11:18:41   300      1  4.2 KiB  snapshot
gateway-2/20260105T1000.csv.gz   4914480830112302143  2026-01-05 10:58:41   300      1  4.6 KiB  snapshot
gateway-1/20260105T1100.csv      7803464101019441819  2026-01-05 10:38:41   300      1  4.5 KiB  snapshot
gateway-1/20260105T1000.csv      1214661719074243850  2026-01-05 10:18:41   300      1  4.5 KiB  snapshot
`,
			pipe: "batch_id\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\tsource\tsource_size\tsource_sha256\n" +
				"gateway-3/20260105T1000.parquet\t8982326459123165011\t2026-01-05T11:38:41.685Z\t300\t1\t4686\tsnapshot\t4166\t617fa9974313ab936e7de82d423d9e45c5e58d62fbf402499a4035769526cdae\n" +
				"gateway-2/20260105T1100.csv\t2512617679824841063\t2026-01-05T11:18:41.548Z\t300\t1\t4307\tsnapshot\t13252\t3a743d2271fa72d628157b8ef5bfbe246dbc04d1a9dc95d3e989486ea4bb18eb\n" +
				"gateway-2/20260105T1000.csv.gz\t4914480830112302143\t2026-01-05T10:58:41.411Z\t300\t1\t4692\tsnapshot\t2197\te5b3e9a8c561ef29a92b29714883394898685db5da9aaaa3169e9d00321a453b\n" +
				"gateway-1/20260105T1100.csv\t7803464101019441819\t2026-01-05T10:38:41.274Z\t300\t1\t4580\tsnapshot\t13852\t0132473afcd38ffdf4150f1f18c628ff9d0fa00cf14ba2a02fea1da1e205327d\n" +
				"gateway-1/20260105T1000.csv\t1214661719074243850\t2026-01-05T10:18:41.137Z\t300\t1\t4657\tsnapshot\t13852\t839daf2199a406c396b99dfcb95397a3416e72f814e14e930f10e68b544dbdec\n",
		},
		{
			name: "batches prefix",
			render: func(o Output) error {
				return RenderBatches(o, "iot.readings", BuildBatchRows(ingested, nil, BatchFilter{Prefix: "gateway-3/"}))
			},
			golden: "batches-prefix.json",
			tty: `BATCH ID                                    SNAPSHOT  COMMITTED (UTC)      ROWS  FILES     SIZE  FROM
gateway-3/20260106T1100.parquet  6732267319869248205  2026-01-05 11:58:41   300      1  4.6 KiB  snapshot
gateway-3/20260105T1000.parquet  8982326459123165011  2026-01-05 11:38:41   300      1  4.6 KiB  snapshot
`,
			pipe: "batch_id\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\tsource\tsource_size\tsource_sha256\n" +
				"gateway-3/20260106T1100.parquet\t6732267319869248205\t2026-01-05T11:58:41.822Z\t300\t1\t4747\tsnapshot\t4216\t33bbec6bf2a3344f9a9db996dbf1b3de71b36e2e8c2cb6058a976fb9dfd931ef\n" +
				"gateway-3/20260105T1000.parquet\t8982326459123165011\t2026-01-05T11:38:41.685Z\t300\t1\t4686\tsnapshot\t4166\t617fa9974313ab936e7de82d423d9e45c5e58d62fbf402499a4035769526cdae\n",
		},
		{
			name: "batches none",
			render: func(o Output) error {
				return RenderBatches(o, "iot.readings", BuildBatchRows(ingested, nil, BatchFilter{Prefix: "gateway-7/"}))
			},
			golden: "batches-empty.json",
			tty:    "no batches in iot.readings\n",
			pipe:   "batch_id\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\tsource\tsource_size\tsource_sha256\n",
		},
		{
			name: "batches with the load history",
			render: func(o Output) error {
				return RenderBatches(o, "iot.readings", BuildBatchRows(rolledback, loadHistory, BatchFilter{}))
			},
			golden: "batches-history.json",
			tty: `BATCH ID                                    SNAPSHOT  COMMITTED (UTC)      ROWS  FILES     SIZE  FROM
gateway-3/20260105T1000.parquet  8982326459123165011  2026-01-05 11:38:41   300      1  4.6 KiB  snapshot
gateway-2/20260105T1100.csv      2512617679824841063  2026-01-05 11:18:41   300      1  4.2 KiB  snapshot
gateway-2/20260105T1000.csv.gz   4914480830112302143  2026-01-05 10:58:41   300      1  4.6 KiB  snapshot
gateway-1/20260105T1100.csv      7803464101019441819  2026-01-05 10:38:41   300      1  4.5 KiB  snapshot
gateway-1/20260105T0900.csv      3116208411237140001  2026-01-05 10:28:41   300      -        -  load history
gateway-1/20260105T1000.csv      1214661719074243850  2026-01-05 10:18:41   300      1  4.5 KiB  snapshot
gateway-2/20260105T0900.csv.gz   3116208411237140002  2026-01-05 09:58:41   300      -        -  load history
`,
			pipe: "batch_id\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\tsource\tsource_size\tsource_sha256\n" +
				"gateway-3/20260105T1000.parquet\t8982326459123165011\t2026-01-05T11:38:41.685Z\t300\t1\t4686\tsnapshot\t4166\t617fa9974313ab936e7de82d423d9e45c5e58d62fbf402499a4035769526cdae\n" +
				"gateway-2/20260105T1100.csv\t2512617679824841063\t2026-01-05T11:18:41.548Z\t300\t1\t4307\tsnapshot\t13252\t3a743d2271fa72d628157b8ef5bfbe246dbc04d1a9dc95d3e989486ea4bb18eb\n" +
				"gateway-2/20260105T1000.csv.gz\t4914480830112302143\t2026-01-05T10:58:41.411Z\t300\t1\t4692\tsnapshot\t2197\te5b3e9a8c561ef29a92b29714883394898685db5da9aaaa3169e9d00321a453b\n" +
				"gateway-1/20260105T1100.csv\t7803464101019441819\t2026-01-05T10:38:41.274Z\t300\t1\t4580\tsnapshot\t13852\t0132473afcd38ffdf4150f1f18c628ff9d0fa00cf14ba2a02fea1da1e205327d\n" +
				"gateway-1/20260105T0900.csv\t3116208411237140001\t2026-01-05T10:28:41.000Z\t300\t\t\tload-history\t9311\t5f0c7e5b2b0f4ad1c5a4ff1e0e7c1b2f9a6c3d2e1f0a9b8c7d6e5f4a3b2c1d0e\n" +
				"gateway-1/20260105T1000.csv\t1214661719074243850\t2026-01-05T10:18:41.137Z\t300\t1\t4657\tsnapshot\t13852\t839daf2199a406c396b99dfcb95397a3416e72f814e14e930f10e68b544dbdec\n" +
				"gateway-2/20260105T0900.csv.gz\t3116208411237140002\t2026-01-05T09:58:41.000Z\t300\t\t\tload-history\t2870\t0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9\n",
		},
		{
			name: "batch from the load history",
			render: func(o Output) error {
				return RenderBatch(o, BuildBatchStatus("iot.readings", loadHistory[1].Key, lake.BatchInfoOf(loadHistory[1]), true))
			},
			golden: "batch-history.json",
			tty: "gateway-2/20260105T0900.csv.gz: loaded into iot.readings in snapshot 3116208411237140002 at 2026-01-05 09:58:41 UTC, 300 rows; " +
				"from the load history (the snapshot has expired), source 2.8 KiB, sha256 0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9\n",
			pipe: "batch_id\tstatus\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\tsource\tsource_size\tsource_sha256\n" +
				"gateway-2/20260105T0900.csv.gz\tloaded\t3116208411237140002\t2026-01-05T09:58:41.000Z\t300\t\t\tload-history\t2870\t0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9\n",
		},
		{
			name: "maintain",
			render: func(o Output) error {
				return RenderMaintain(o, round("iot.readings", false, maintained(), 10, nil))
			},
			golden: "maintain.json",
			tty: `iot.readings: compacted 8 files (3.0 MiB) into 2 (1.0 MiB), expired 4 snapshots, removed 2 orphan files; metadata v10, took 1.2s

Compaction (replace snapshot 2798769066474224232)
  PARTITION            REASON  TIER  FILES IN   SIZE IN   ROWS  FILES OUT  SIZE OUT
  time_day=2026-01-05  tiered     0         5  22.4 KiB   1500          1  11.7 KiB
  time_day=2026-01-04  cold       -         3   3.0 MiB  90000          1   1.0 MiB

Snapshot expiry
  4 snapshots expired (3 kept); 4 batch ids moved into the load history; 13 files deleted

Orphan files
  2 files removed (6.0 KiB); 1 younger than 1h kept
  data/time_day=2026-01-05/00000-0-dead-00001.parquet
  metadata/snap-1-dead.avro

Settings (maintenance by ingest: on, timelake.auto-maintain=true)
  PROPERTY                              VALUE  FROM
  timelake.auto-maintain                true   property
  timelake.snapshot-retention           1h     property
  timelake.min-snapshots                20     default
  timelake.max-snapshots                1000   default
  timelake.dedupe-window                14d    default
  timelake.target-file-size             8MiB   default
  timelake.compact-min-files            4      default
  timelake.compact-cold-after           1h     default
  timelake.orphan-min-age               1h     default
  timelake.read-dedup                   false  default
  timelake.retention                    none   default
  write.metadata.previous-versions-max  5      property
`,
			pipe: "table\tiot.readings\n" +
				"dry_run\tfalse\n" +
				"enabled\ttrue\ttimelake.auto-maintain=true\n" +
				"compacted\ttime_day=2026-01-05\ttiered\t0\t5\t22922\t1500\t1\t12025\t0\n" +
				"compacted\ttime_day=2026-01-04\tcold\t0\t3\t3145728\t90000\t1\t1048576\t0\n" +
				"compaction_snapshot_id\t2798769066474224232\n" +
				"expired\t4\t3\t4\t13\n" +
				"orphans\t2\t6144\t1\n" +
				"orphan\tdata/time_day=2026-01-05/00000-0-dead-00001.parquet\n" +
				"orphan\tmetadata/snap-1-dead.avro\n" +
				"setting\ttimelake.auto-maintain\ttrue\tproperty\n" +
				"setting\ttimelake.snapshot-retention\t1h\tproperty\n" +
				"setting\ttimelake.min-snapshots\t20\tdefault\n" +
				"setting\ttimelake.max-snapshots\t1000\tdefault\n" +
				"setting\ttimelake.dedupe-window\t14d\tdefault\n" +
				"setting\ttimelake.target-file-size\t8MiB\tdefault\n" +
				"setting\ttimelake.compact-min-files\t4\tdefault\n" +
				"setting\ttimelake.compact-cold-after\t1h\tdefault\n" +
				"setting\ttimelake.orphan-min-age\t1h\tdefault\n" +
				"setting\ttimelake.read-dedup\tfalse\tdefault\n" +
				"setting\ttimelake.retention\tnone\tdefault\n" +
				"setting\twrite.metadata.previous-versions-max\t5\tproperty\n" +
				"pending\tfalse\n" +
				"metadata_version\t10\n" +
				"seconds\t1.250\n",
		},
		{
			name: "maintain dry run, not enabled, budget used up",
			render: func(o Output) error {
				return RenderMaintain(o, round("other.events", true, plannedOnly(), 8, nil))
			},
			golden: "maintain-dry-run.json",
			tty: `other.events: would compact 5 files (22.4 KiB) in 1 group, would expire 2 snapshots; metadata v8, took 0.3s; the budget ran out with work left: run it again
note: the settings of other.events keep ingest from maintaining it (not created by timelake and timelake.auto-maintain is not set); timelake tables alter other.events --set timelake.auto-maintain=true lets it

Compaction
  PARTITION            REASON  TIER  FILES IN   SIZE IN  ROWS  FILES OUT  SIZE OUT
  time_day=2026-01-05  tiered     0         5  22.4 KiB  1500          -         -

Snapshot expiry
  2 snapshots would expire (4 kept); their batch ids would move into the load history

Orphan files
  not done this round (the budget ran out before it)

Settings (maintenance by ingest: off, not created by timelake and timelake.auto-maintain is not set)
  PROPERTY                              VALUE  FROM
  timelake.auto-maintain                false  default
  timelake.snapshot-retention           5m     default
  timelake.min-snapshots                20     default
  timelake.max-snapshots                1000   default
  timelake.dedupe-window                14d    default
  timelake.target-file-size             8MiB   default
  timelake.compact-min-files            4      default
  timelake.compact-cold-after           1h     default
  timelake.orphan-min-age               1h     default
  timelake.read-dedup                   false  default
  timelake.retention                    none   default
  write.metadata.previous-versions-max  100    default
`,
			pipe: "table\tother.events\n" +
				"dry_run\ttrue\n" +
				"enabled\tfalse\tnot created by timelake and timelake.auto-maintain is not set\n" +
				"compacted\ttime_day=2026-01-05\ttiered\t0\t5\t22922\t1500\t0\t0\t0\n" +
				"expired\t2\t4\t0\t0\n" +
				"orphans_skipped\tthe budget ran out before it\t\t\n" +
				"setting\ttimelake.auto-maintain\tfalse\tdefault\n" +
				"setting\ttimelake.snapshot-retention\t5m\tdefault\n" +
				"setting\ttimelake.min-snapshots\t20\tdefault\n" +
				"setting\ttimelake.max-snapshots\t1000\tdefault\n" +
				"setting\ttimelake.dedupe-window\t14d\tdefault\n" +
				"setting\ttimelake.target-file-size\t8MiB\tdefault\n" +
				"setting\ttimelake.compact-min-files\t4\tdefault\n" +
				"setting\ttimelake.compact-cold-after\t1h\tdefault\n" +
				"setting\ttimelake.orphan-min-age\t1h\tdefault\n" +
				"setting\ttimelake.read-dedup\tfalse\tdefault\n" +
				"setting\ttimelake.retention\tnone\tdefault\n" +
				"setting\twrite.metadata.previous-versions-max\t100\tdefault\n" +
				"pending\ttrue\n" +
				"metadata_version\t8\n" +
				"seconds\t0.300\n",
		},
		{
			name: "maintain, nothing to do, orphans not due",
			render: func(o Output) error {
				return RenderMaintain(o, round("iot.readings", false, idle(0), 7, nil))
			},
			golden: "maintain-idle.json",
			tty: `iot.readings: nothing to compact, no snapshot to expire; metadata v7, took 0.2s

Compaction
  nothing to do: every data file is at least 8MiB (timelake.target-file-size)

Snapshot expiry
  none to expire (3 kept)

Orphan files
  not looked for this round: last looked for at 2026-01-05T10:30:00Z, next at 2026-01-05T11:30:00Z (at most once an hour; --orphans looks now)

Settings (maintenance by ingest: on, timelake.auto-maintain=true)
  PROPERTY                              VALUE  FROM
  timelake.auto-maintain                true   property
  timelake.snapshot-retention           5m     default
  timelake.min-snapshots                20     default
  timelake.max-snapshots                1000   default
  timelake.dedupe-window                14d    default
  timelake.target-file-size             8MiB   default
  timelake.compact-min-files            4      default
  timelake.compact-cold-after           1h     default
  timelake.orphan-min-age               1h     default
  timelake.read-dedup                   false  default
  timelake.retention                    none   default
  write.metadata.previous-versions-max  100    default
`,
			pipe: "table\tiot.readings\n" +
				"dry_run\tfalse\n" +
				"enabled\ttrue\ttimelake.auto-maintain=true\n" +
				"compaction_idle\tevery data file is at least 8MiB (timelake.target-file-size)\n" +
				"expired\t0\t3\t0\t0\n" +
				"orphans_skipped\tnot due: orphan files are looked for at most once every 1h (--orphans looks now)\t2026-01-05T10:30:00.000Z\t2026-01-05T11:30:00.000Z\n" +
				"setting\ttimelake.auto-maintain\ttrue\tproperty\n" +
				"setting\ttimelake.snapshot-retention\t5m\tdefault\n" +
				"setting\ttimelake.min-snapshots\t20\tdefault\n" +
				"setting\ttimelake.max-snapshots\t1000\tdefault\n" +
				"setting\ttimelake.dedupe-window\t14d\tdefault\n" +
				"setting\ttimelake.target-file-size\t8MiB\tdefault\n" +
				"setting\ttimelake.compact-min-files\t4\tdefault\n" +
				"setting\ttimelake.compact-cold-after\t1h\tdefault\n" +
				"setting\ttimelake.orphan-min-age\t1h\tdefault\n" +
				"setting\ttimelake.read-dedup\tfalse\tdefault\n" +
				"setting\ttimelake.retention\tnone\tdefault\n" +
				"setting\twrite.metadata.previous-versions-max\t100\tdefault\n" +
				"pending\tfalse\n" +
				"metadata_version\t7\n" +
				"seconds\t0.200\n",
		},
		{
			name: "maintain failed",
			render: func(o Output) error {
				rep := maintained()
				rep.Expired, rep.Orphans = lake.ExpireResult{}, nil
				rep.Upgraded = []string{lake.PropAutoMaintain, table.MetadataPreviousVersionsMaxKey}
				return RenderMaintain(o, round("iot.readings", false, rep, 9,
					errors.New("expire snapshots of iot.readings: commit: lost 20 races")))
			},
			golden: "maintain-failed.json",
			tty: `iot.readings: compacted 8 files (3.0 MiB) into 2 (1.0 MiB); metadata v9, took 1.2s
upgraded: a table created before maintenance existed; set timelake.auto-maintain, write.metadata.previous-versions-max

Compaction (replace snapshot 2798769066474224232)
  PARTITION            REASON  TIER  FILES IN   SIZE IN   ROWS  FILES OUT  SIZE OUT
  time_day=2026-01-05  tiered     0         5  22.4 KiB   1500          1  11.7 KiB
  time_day=2026-01-04  cold       -         3   3.0 MiB  90000          1   1.0 MiB

Snapshot expiry
  not done this round (the round stopped before it)

Orphan files
  not done this round (the round stopped before it)

Settings (maintenance by ingest: on, timelake.auto-maintain=true)
  PROPERTY                              VALUE  FROM
  timelake.auto-maintain                true   property
  timelake.snapshot-retention           1h     property
  timelake.min-snapshots                20     default
  timelake.max-snapshots                1000   default
  timelake.dedupe-window                14d    default
  timelake.target-file-size             8MiB   default
  timelake.compact-min-files            4      default
  timelake.compact-cold-after           1h     default
  timelake.orphan-min-age               1h     default
  timelake.read-dedup                   false  default
  timelake.retention                    none   default
  write.metadata.previous-versions-max  5      property
`,
			pipe: "table\tiot.readings\n" +
				"dry_run\tfalse\n" +
				"enabled\ttrue\ttimelake.auto-maintain=true\n" +
				"upgraded\ttimelake.auto-maintain\n" +
				"upgraded\twrite.metadata.previous-versions-max\n" +
				"compacted\ttime_day=2026-01-05\ttiered\t0\t5\t22922\t1500\t1\t12025\t0\n" +
				"compacted\ttime_day=2026-01-04\tcold\t0\t3\t3145728\t90000\t1\t1048576\t0\n" +
				"compaction_snapshot_id\t2798769066474224232\n" +
				"orphans_skipped\ta step before it failed\t\t\n" +
				"setting\ttimelake.auto-maintain\ttrue\tproperty\n" +
				"setting\ttimelake.snapshot-retention\t1h\tproperty\n" +
				"setting\ttimelake.min-snapshots\t20\tdefault\n" +
				"setting\ttimelake.max-snapshots\t1000\tdefault\n" +
				"setting\ttimelake.dedupe-window\t14d\tdefault\n" +
				"setting\ttimelake.target-file-size\t8MiB\tdefault\n" +
				"setting\ttimelake.compact-min-files\t4\tdefault\n" +
				"setting\ttimelake.compact-cold-after\t1h\tdefault\n" +
				"setting\ttimelake.orphan-min-age\t1h\tdefault\n" +
				"setting\ttimelake.read-dedup\tfalse\tdefault\n" +
				"setting\ttimelake.retention\tnone\tdefault\n" +
				"setting\twrite.metadata.previous-versions-max\t5\tproperty\n" +
				"pending\tfalse\n" +
				"metadata_version\t9\n" +
				"seconds\t1.250\n",
		},
		{
			name:   "alter",
			render: func(o Output) error { return RenderAlter(o, altered(false)) },
			golden: "alter.json",
			tty: `iot.readings: 3 properties changed (metadata v9)
PROPERTY                              BEFORE                AFTER                  CHANGED
history.expire.max-snapshot-age-ms    not set               not set                no
timelake.auto-maintain                true                  true                   no
timelake.min-snapshots                20                    1                      yes
timelake.snapshot-retention           not set (default 5m)  1s                     yes
write.metadata.previous-versions-max  5                     not set (default 100)  yes
`,
			pipe: "property\tbefore\tafter\tchanged\n" +
				"history.expire.max-snapshot-age-ms\t\t\tfalse\n" +
				"timelake.auto-maintain\ttrue\ttrue\tfalse\n" +
				"timelake.min-snapshots\t20\t1\ttrue\n" +
				"timelake.snapshot-retention\t\t1s\ttrue\n" +
				"write.metadata.previous-versions-max\t5\t\ttrue\n",
		},
		{
			name:   "alter dry run",
			render: func(o Output) error { return RenderAlter(o, altered(true)) },
			golden: "alter-dry-run.json",
			tty: `iot.readings: 3 properties would change (dry run; metadata v9)
PROPERTY                              BEFORE                AFTER                  CHANGED
history.expire.max-snapshot-age-ms    not set               not set                no
timelake.auto-maintain                true                  true                   no
timelake.min-snapshots                20                    1                      yes
timelake.snapshot-retention           not set (default 5m)  1s                     yes
write.metadata.previous-versions-max  5                     not set (default 100)  yes
`,
			pipe: "property\tbefore\tafter\tchanged\n" +
				"history.expire.max-snapshot-age-ms\t\t\tfalse\n" +
				"timelake.auto-maintain\ttrue\ttrue\tfalse\n" +
				"timelake.min-snapshots\t20\t1\ttrue\n" +
				"timelake.snapshot-retention\t\t1s\ttrue\n" +
				"write.metadata.previous-versions-max\t5\t\ttrue\n",
		},
		{
			name: "batch loaded",
			render: func(o Output) error {
				return RenderBatch(o, batchStatusIn(rolledback, "gateway-2/20260105T1000.csv.gz"))
			},
			golden: "batch-loaded.json",
			tty: `gateway-2/20260105T1000.csv.gz: loaded into iot.readings in snapshot 4914480830112302143 at 2026-01-05 10:58:41 UTC, 300 rows, 1 data file, 4.6 KiB
`,
			pipe: "batch_id\tstatus\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\tsource\tsource_size\tsource_sha256\n" +
				"gateway-2/20260105T1000.csv.gz\tloaded\t4914480830112302143\t2026-01-05T10:58:41.411Z\t300\t1\t4692\tsnapshot\t2197\te5b3e9a8c561ef29a92b29714883394898685db5da9aaaa3169e9d00321a453b\n",
		},
		{
			name: "batch rolled back",
			render: func(o Output) error {
				return RenderBatch(o, batchStatusIn(rolledback, "gateway-3/20260106T1100.parquet"))
			},
			golden: "batch-not-loaded.json",
			tty: `gateway-3/20260106T1100.parquet: not loaded into iot.readings (neither a snapshot in the current ancestry nor the load history has this batch id)
`,
			pipe: "batch_id\tstatus\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\tsource\tsource_size\tsource_sha256\n" +
				"gateway-3/20260106T1100.parquet\tnot-loaded\t\t\t\t\t\t\t\t\n",
		},
		{
			name: "show",
			render: func(o Output) error {
				d := BuildTableDetail(readings, 8, metaLoc, rolledback)
				d.Catalog = "metadata files"
				return RenderShow(o, d)
			},
			golden: "show.json",
			tty: `Table:             iot.readings
Location:          s3://example-lake/warehouse/iot/readings
Metadata file:     s3://example-lake/warehouse/iot/readings/metadata/v8.metadata.json
Metadata version:  v8
Catalog:           metadata files
Format version:    2
UUID:              d95238a3-1b58-4bef-bbc7-b5609a74fe7e
Last updated:      2026-01-05 12:18:41 UTC

Schema (id 0)
  ID  NAME           TYPE         REQUIRED
   1  time           timestamptz  yes
   2  device_id      string
   3  temperature_c  double
   4  humidity_pct   double
   5  battery_v      double

Partition spec (id 0)
  day(time)  (time_day)

Sort order (id 1)
  device_id asc nulls-first, time asc nulls-first

Timelake contract
  timelake.chunk        day
  timelake.series-key   device_id
  timelake.time-column  time

Properties
  schema.name-mapping.default      [{"names":["time"],"field-id":1},{"names":["device_id"],"...
  write.metadata.metrics.default   truncate(16)
  write.parquet.compression-codec  zstd
  write.parquet.compression-level  3
  write.target-file-size-bytes     536870912

Current snapshot
  8982326459123165011  2026-01-05 11:38:41 UTC  append  batch gateway-3/20260105T1000.parquet

Totals
  1500 rows in 5 data files, 22.4 KiB; 6 snapshots
`,
			pipe: "table\tiot.readings\n" +
				"location\ts3://example-lake/warehouse/iot/readings\n" +
				"metadata_location\ts3://example-lake/warehouse/iot/readings/metadata/v8.metadata.json\n" +
				"metadata_version\t8\n" +
				"catalog\tmetadata files\n" +
				"format_version\t2\n" +
				"table_uuid\td95238a3-1b58-4bef-bbc7-b5609a74fe7e\n" +
				"last_updated_at\t2026-01-05T12:18:41.959Z\n" +
				"schema_id\t0\n" +
				"column\t1\ttime\ttimestamptz\trequired\n" +
				"column\t2\tdevice_id\tstring\toptional\n" +
				"column\t3\ttemperature_c\tdouble\toptional\n" +
				"column\t4\thumidity_pct\tdouble\toptional\n" +
				"column\t5\tbattery_v\tdouble\toptional\n" +
				"partition_spec_id\t0\n" +
				"partition_field\ttime_day\tday(time)\n" +
				"sort_order_id\t1\n" +
				"sort_field\tdevice_id\tidentity\tasc\tnulls-first\n" +
				"sort_field\ttime\tidentity\tasc\tnulls-first\n" +
				"contract\ttimelake.chunk\tday\n" +
				"contract\ttimelake.series-key\tdevice_id\n" +
				"contract\ttimelake.time-column\ttime\n" +
				"property\tschema.name-mapping.default\t[{\"names\":[\"time\"],\"field-id\":1},{\"names\":[\"device_id\"],\"field-id\":2},{\"names\":[\"temperature_c\"],\"field-id\":3},{\"names\":[\"humidity_pct\"],\"field-id\":4},{\"names\":[\"battery_v\"],\"field-id\":5}]\n" +
				"property\twrite.metadata.metrics.default\ttruncate(16)\n" +
				"property\twrite.parquet.compression-codec\tzstd\n" +
				"property\twrite.parquet.compression-level\t3\n" +
				"property\twrite.target-file-size-bytes\t536870912\n" +
				"current_snapshot\t8982326459123165011\t2026-01-05T11:38:41.685Z\tappend\tgateway-3/20260105T1000.parquet\n" +
				"snapshots\t6\n" +
				"rows\t1500\n" +
				"data_files\t5\n" +
				"delete_files\t0\n" +
				"size_bytes\t22922\n",
		},
		{
			name: "show empty",
			render: func(o Output) error {
				return RenderShow(o, BuildTableDetail(readings, 1, "s3://example-lake/warehouse/iot/readings/metadata/v1.metadata.json", created))
			},
			golden: "show-empty.json",
			tty: `Table:             iot.readings
Location:          s3://example-lake/warehouse/iot/readings
Metadata file:     s3://example-lake/warehouse/iot/readings/metadata/v1.metadata.json
Metadata version:  v1
Format version:    2
UUID:              d95238a3-1b58-4bef-bbc7-b5609a74fe7e
Last updated:      2026-01-05 09:58:41 UTC

Schema (id 0)
  ID  NAME           TYPE         REQUIRED
   1  time           timestamptz  yes
   2  device_id      string
   3  temperature_c  double
   4  humidity_pct   double
   5  battery_v      double

Partition spec (id 0)
  day(time)  (time_day)

Sort order (id 1)
  device_id asc nulls-first, time asc nulls-first

Timelake contract
  timelake.chunk        day
  timelake.series-key   device_id
  timelake.time-column  time

Properties
  write.metadata.metrics.default   truncate(16)
  write.parquet.compression-codec  zstd
  write.parquet.compression-level  3
  write.target-file-size-bytes     536870912

Current snapshot
  none (no data yet)

Totals
  0 rows in 0 data files, 0 B; 0 snapshots
`,
			pipe: "table\tiot.readings\n" +
				"location\ts3://example-lake/warehouse/iot/readings\n" +
				"metadata_location\ts3://example-lake/warehouse/iot/readings/metadata/v1.metadata.json\n" +
				"metadata_version\t1\n" +
				"format_version\t2\n" +
				"table_uuid\td95238a3-1b58-4bef-bbc7-b5609a74fe7e\n" +
				"last_updated_at\t2026-01-05T09:58:41.000Z\n" +
				"schema_id\t0\n" +
				"column\t1\ttime\ttimestamptz\trequired\n" +
				"column\t2\tdevice_id\tstring\toptional\n" +
				"column\t3\ttemperature_c\tdouble\toptional\n" +
				"column\t4\thumidity_pct\tdouble\toptional\n" +
				"column\t5\tbattery_v\tdouble\toptional\n" +
				"partition_spec_id\t0\n" +
				"partition_field\ttime_day\tday(time)\n" +
				"sort_order_id\t1\n" +
				"sort_field\tdevice_id\tidentity\tasc\tnulls-first\n" +
				"sort_field\ttime\tidentity\tasc\tnulls-first\n" +
				"contract\ttimelake.chunk\tday\n" +
				"contract\ttimelake.series-key\tdevice_id\n" +
				"contract\ttimelake.time-column\ttime\n" +
				"property\twrite.metadata.metrics.default\ttruncate(16)\n" +
				"property\twrite.parquet.compression-codec\tzstd\n" +
				"property\twrite.parquet.compression-level\t3\n" +
				"property\twrite.target-file-size-bytes\t536870912\n" +
				"snapshots\t0\n" +
				"rows\t0\n" +
				"data_files\t0\n" +
				"delete_files\t0\n" +
				"size_bytes\t0\n",
		},
		{
			name: "files",
			render: func(o Output) error {
				return RenderFiles(o, "iot.readings", ingested.Location(), BuildFileRows(ingested, dataFiles(t, ingested)))
			},
			golden: "files.json",
			tty: `PARTITION            ROWS     SIZE             SNAPSHOT  PATH
time_day=2026-01-05   300  4.5 KiB  1214661719074243850  data/time_day=2026-01-05/00000-0-f-00001.parquet
time_day=2026-01-05   300  4.5 KiB  7803464101019441819  data/time_day=2026-01-05/00000-0-e-00001.parquet
time_day=2026-01-05   300  4.6 KiB  4914480830112302143  data/time_day=2026-01-05/00000-0-d-00001.parquet
time_day=2026-01-05   300  4.2 KiB  2512617679824841063  data/time_day=2026-01-05/00000-0-c-00001.parquet
time_day=2026-01-05   300  4.6 KiB  8982326459123165011  data/time_day=2026-01-05/00000-0-b-00001.parquet
time_day=2026-01-06   300  4.6 KiB  6732267319869248205  data/time_day=2026-01-06/00000-0-a-00001.parquet
6 data files in 2 partitions, 1800 rows, 27.0 KiB; 3.0 files per partition, 4.5 KiB per file on average
`,
			pipe: "partition\trows\tsize_bytes\tsnapshot_id\tpath\n" +
				"time_day=2026-01-05\t300\t4657\t1214661719074243850\ts3://example-lake/warehouse/iot/readings/data/time_day=2026-01-05/00000-0-f-00001.parquet\n" +
				"time_day=2026-01-05\t300\t4580\t7803464101019441819\ts3://example-lake/warehouse/iot/readings/data/time_day=2026-01-05/00000-0-e-00001.parquet\n" +
				"time_day=2026-01-05\t300\t4692\t4914480830112302143\ts3://example-lake/warehouse/iot/readings/data/time_day=2026-01-05/00000-0-d-00001.parquet\n" +
				"time_day=2026-01-05\t300\t4307\t2512617679824841063\ts3://example-lake/warehouse/iot/readings/data/time_day=2026-01-05/00000-0-c-00001.parquet\n" +
				"time_day=2026-01-05\t300\t4686\t8982326459123165011\ts3://example-lake/warehouse/iot/readings/data/time_day=2026-01-05/00000-0-b-00001.parquet\n" +
				"time_day=2026-01-06\t300\t4747\t6732267319869248205\ts3://example-lake/warehouse/iot/readings/data/time_day=2026-01-06/00000-0-a-00001.parquet\n",
		},
		{
			name: "files none",
			render: func(o Output) error {
				return RenderFiles(o, "iot.empty", created.Location(), BuildFileRows(created, nil))
			},
			golden: "files-empty.json",
			tty:    "no data files in iot.empty\n",
			pipe:   "partition\trows\tsize_bytes\tsnapshot_id\tpath\n",
		},
		{
			name:   "created",
			render: func(o Output) error { return RenderCreated(o, BuildCreated(readings, created, "sample.csv")) },
			golden: "create.json",
			tty: `created table iot.readings at s3://example-lake/warehouse/iot/readings from sample.csv
  time column time, partition day(time), series key device_id
  time                 timestamptz not null
  device_id            string
  temperature_c        double
  humidity_pct         double
  battery_v            double
`,
			pipe: "created table iot.readings at s3://example-lake/warehouse/iot/readings from sample.csv\n" +
				"  time column time, partition day(time), series key device_id\n" +
				"  time                 timestamptz not null\n" +
				"  device_id            string\n" +
				"  temperature_c        double\n" +
				"  humidity_pct         double\n" +
				"  battery_v            double\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []struct {
				name      string
				tty, json bool
				want      string
			}{
				{"tty", true, false, tc.tty},
				{"pipe", false, false, tc.pipe},
				{"json", true, true, ""},
				{"json in a pipe", false, true, ""},
			} {
				ios, b, _ := iostreams.Test()
				ios.SetStdoutTTY(mode.tty)
				if err := tc.render(Output{IO: ios, JSON: mode.json}); err != nil {
					t.Fatalf("%s: %v", mode.name, err)
				}
				switch {
				case mode.json && mode.tty:
					checkGolden(t, tc.golden, b.Bytes())
				case mode.json:
					// The golden document on exactly one line.
					var want bytes.Buffer
					if golden, err := os.ReadFile(filepath.Join("testdata", "golden", tc.golden)); err != nil {
						t.Fatal(err)
					} else if err := json.Compact(&want, golden); err != nil {
						t.Fatal(err)
					}
					if got := b.String(); got != want.String()+"\n" {
						t.Errorf("%s output:\n%s\nwant one line:\n%s", mode.name, got, want.String())
					}
				default:
					if got := b.String(); got != mode.want {
						t.Errorf("%s output:\n%s\nwant:\n%s\ngot (quoted): %q", mode.name, got, mode.want, got)
					}
				}
			}
		})
	}
}

// TestBuildBatchRows checks the filters over both sources: the prefix, the
// time (a history row between snapshots counts) and the limit, applied to
// the merged list newest first.
func TestBuildBatchRows(t *testing.T) {
	meta := fixture(t, "rolledback")
	ids := func(rows []BatchRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.BatchID+"@"+r.Source)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		f    BatchFilter
		want []string
	}{
		{"prefix", BatchFilter{Prefix: "gateway-1/"}, []string{
			"gateway-1/20260105T1100.csv@snapshot", "gateway-1/20260105T0900.csv@load-history", "gateway-1/20260105T1000.csv@snapshot"}},
		{"since", BatchFilter{Since: time.Date(2026, 1, 5, 10, 18, 41, 137e6, time.UTC), Prefix: "gateway-1/"}, []string{
			"gateway-1/20260105T1100.csv@snapshot", "gateway-1/20260105T0900.csv@load-history", "gateway-1/20260105T1000.csv@snapshot"}},
		{"since excludes", BatchFilter{Since: time.Date(2026, 1, 5, 10, 18, 41, 138e6, time.UTC), Prefix: "gateway-1/"}, []string{
			"gateway-1/20260105T1100.csv@snapshot", "gateway-1/20260105T0900.csv@load-history"}},
		{"limit", BatchFilter{Limit: 2, Prefix: "gateway-2/"}, []string{
			"gateway-2/20260105T1100.csv@snapshot", "gateway-2/20260105T1000.csv.gz@snapshot"}},
		{"limit reaches the history", BatchFilter{Limit: 3, Prefix: "gateway-2/"}, []string{
			"gateway-2/20260105T1100.csv@snapshot", "gateway-2/20260105T1000.csv.gz@snapshot", "gateway-2/20260105T0900.csv.gz@load-history"}},
		{"history only", BatchFilter{Prefix: "gateway-2/20260105T09"}, []string{"gateway-2/20260105T0900.csv.gz@load-history"}},
	} {
		if got := ids(BuildBatchRows(meta, loadHistory, tc.f)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if rows := BuildBatchRows(meta, nil, BatchFilter{Limit: 1}); len(rows) != 1 || rows[0].BatchID != "gateway-3/20260105T1000.parquet" {
		t.Errorf("limit 1 without history: %+v", rows)
	}
}

// TestMaintainSaysWhatItLeft: groups the round's byte bound left for the
// next round are counted in every form.
func TestMaintainSaysWhatItLeft(t *testing.T) {
	r := round("iot.readings", false, idle(2), 7, nil)
	if d := maintainDocOf(r); d.Compaction == nil || d.Compaction.Deferred != 2 || d.Compaction.Idle != "" {
		t.Fatalf("report %+v", d.Compaction)
	}
	for tty, want := range map[bool]string{true: "  2 more groups left for the next round: this round's bound on the bytes it rewrites is spent, or their rewrite would not end within its budget\n",
		false: "compaction_deferred\t2\n"} {
		ios, out, _ := iostreams.Test()
		ios.SetStdoutTTY(tty)
		if err := RenderMaintain(Output{IO: ios}, r); err != nil || !strings.Contains(out.String(), want) {
			t.Errorf("tty %v: %v\n%s", tty, err, out.String())
		}
	}
}
