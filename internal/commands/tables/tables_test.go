package tables

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
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
			name:   "batches after rollback",
			render: func(o Output) error { return RenderBatches(o, "iot.readings", BuildBatchRows(rolledback, "")) },
			golden: "batches.json",
			tty: `BATCH ID                                    SNAPSHOT  COMMITTED (UTC)      ROWS  FILES     SIZE
gateway-3/20260105T1000.parquet  8982326459123165011  2026-01-05 11:38:41   300      1  4.6 KiB
gateway-2/20260105T1100.csv      2512617679824841063  2026-01-05 11:18:41   300      1  4.2 KiB
gateway-2/20260105T1000.csv.gz   4914480830112302143  2026-01-05 10:58:41   300      1  4.6 KiB
gateway-1/20260105T1100.csv      7803464101019441819  2026-01-05 10:38:41   300      1  4.5 KiB
gateway-1/20260105T1000.csv      1214661719074243850  2026-01-05 10:18:41   300      1  4.5 KiB
`,
			pipe: "batch_id\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\n" +
				"gateway-3/20260105T1000.parquet\t8982326459123165011\t2026-01-05T11:38:41.685Z\t300\t1\t4686\n" +
				"gateway-2/20260105T1100.csv\t2512617679824841063\t2026-01-05T11:18:41.548Z\t300\t1\t4307\n" +
				"gateway-2/20260105T1000.csv.gz\t4914480830112302143\t2026-01-05T10:58:41.411Z\t300\t1\t4692\n" +
				"gateway-1/20260105T1100.csv\t7803464101019441819\t2026-01-05T10:38:41.274Z\t300\t1\t4580\n" +
				"gateway-1/20260105T1000.csv\t1214661719074243850\t2026-01-05T10:18:41.137Z\t300\t1\t4657\n",
		},
		{
			name:   "batches prefix",
			render: func(o Output) error { return RenderBatches(o, "iot.readings", BuildBatchRows(ingested, "gateway-3/")) },
			golden: "batches-prefix.json",
			tty: `BATCH ID                                    SNAPSHOT  COMMITTED (UTC)      ROWS  FILES     SIZE
gateway-3/20260106T1100.parquet  6732267319869248205  2026-01-05 11:58:41   300      1  4.6 KiB
gateway-3/20260105T1000.parquet  8982326459123165011  2026-01-05 11:38:41   300      1  4.6 KiB
`,
			pipe: "batch_id\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\n" +
				"gateway-3/20260106T1100.parquet\t6732267319869248205\t2026-01-05T11:58:41.822Z\t300\t1\t4747\n" +
				"gateway-3/20260105T1000.parquet\t8982326459123165011\t2026-01-05T11:38:41.685Z\t300\t1\t4686\n",
		},
		{
			name:   "batches none",
			render: func(o Output) error { return RenderBatches(o, "iot.readings", BuildBatchRows(ingested, "gateway-7/")) },
			golden: "batches-empty.json",
			tty:    "no batches in iot.readings\n",
			pipe:   "batch_id\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\n",
		},
		{
			name: "batch loaded",
			render: func(o Output) error {
				return RenderBatch(o, BuildBatchStatus("iot.readings", rolledback, "gateway-2/20260105T1000.csv.gz"))
			},
			golden: "batch-loaded.json",
			tty: `gateway-2/20260105T1000.csv.gz: loaded into iot.readings in snapshot 4914480830112302143 at 2026-01-05 10:58:41 UTC, 300 rows, 1 data file, 4.6 KiB
`,
			pipe: "batch_id\tstatus\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\n" +
				"gateway-2/20260105T1000.csv.gz\tloaded\t4914480830112302143\t2026-01-05T10:58:41.411Z\t300\t1\t4692\n",
		},
		{
			name: "batch rolled back",
			render: func(o Output) error {
				return RenderBatch(o, BuildBatchStatus("iot.readings", rolledback, "gateway-3/20260106T1100.parquet"))
			},
			golden: "batch-not-loaded.json",
			tty: `gateway-3/20260106T1100.parquet: not loaded into iot.readings (no snapshot in the current ancestry has this batch id)
`,
			pipe: "batch_id\tstatus\tsnapshot_id\tcommitted_at\trows\tdata_files\tsize_bytes\n" +
				"gateway-3/20260106T1100.parquet\tnot-loaded\t\t\t\t\t\n",
		},
		{
			name:   "show",
			render: func(o Output) error { return RenderShow(o, BuildTableDetail(readings, 8, metaLoc, rolledback)) },
			golden: "show.json",
			tty: `Table:           iot.readings
Location:        s3://example-lake/warehouse/iot/readings
Metadata:        v8 (s3://example-lake/warehouse/iot/readings/metadata/v8.metadata.json)
Format version:  2
UUID:            d95238a3-1b58-4bef-bbc7-b5609a74fe7e
Last updated:    2026-01-05 12:18:41 UTC

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
			tty: `Table:           iot.readings
Location:        s3://example-lake/warehouse/iot/readings
Metadata:        v1 (s3://example-lake/warehouse/iot/readings/metadata/v1.metadata.json)
Format version:  2
UUID:            d95238a3-1b58-4bef-bbc7-b5609a74fe7e
Last updated:    2026-01-05 09:58:41 UTC

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
