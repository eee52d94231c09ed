package settings

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/timelake/timelake/internal/alert"
	"github.com/timelake/timelake/internal/decode"
	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/route"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/tablename"
	"github.com/timelake/timelake/internal/upload"
)

// The registry: every setting of every command, in the order of
// docs/configuration.md. Declare a new setting here (see the package doc).

// Locations.
var (
	Warehouse = register(&Setting[string]{Spec: Spec{
		Flag: "warehouse", Env: []string{"TIMELAKE_WAREHOUSE"},
		Help:     "warehouse: s3://bucket/prefix or a local folder",
		Commands: []Command{Ingest, Serve, Upload, Tables, LandingGroup, Env}, Group: GroupLocations,
	}, Kind: Checked(func(s string) error { _, err := storage.ParseLocation(s, false); return err })})

	Table = register(&Setting[tablename.Name]{Spec: Spec{
		Flag: "table", Env: []string{"TIMELAKE_TABLE"},
		Help:     "table name, namespace.table",
		Commands: []Command{Ingest, Serve, Upload, LandingGroup, Env}, Group: GroupLocations,
	}, Kind: Convert(tablename.Parse)})

	Routes = register(&Setting[route.Routes]{Spec: Spec{
		Flag: "route", Env: []string{"TIMELAKE_ROUTES"},
		Help:     "load the landing keys PATTERN takes into TABLE, PATTERN=TABLE: a glob over the key (readings/**) or a key prefix, and a table name in which {1}, {2}, ... are the key's folders (*/**=iot.{1}); repeat, or one per line or comma-separated in the variable, for several tables (instead of --table); ;NAME=VALUE after the table sets a table default of its tables with an ingest flag's name, a value with commas between braces (;partition=hour;series-key={device,site}; docs/routing.md)",
		Commands: []Command{Ingest, Serve, Upload, LandingAudit, LandingStatus}, Group: GroupLocations,
	}, Kind: RouteRules()})

	Landing = register(&Setting[storage.Location]{Spec: Spec{
		Flag: "landing", Env: []string{"LANDING_BUCKET", "TIMELAKE_LANDING"},
		Help:     "landing bucket: bucket name, s3://bucket/prefix, or a local folder such as ./landing",
		Commands: []Command{Ingest, Serve, Upload, LandingGroup, Env}, Group: GroupLocations,
	}, Kind: Convert(func(s string) (storage.Location, error) { return storage.ParseLocation(s, true) })})

	LandingPrefix = register(&Setting[string]{Spec: Spec{
		Flag: "prefix", Env: []string{"TIMELAKE_LANDING_PREFIX"},
		Help:     "only load landing keys that start with this prefix",
		Commands: []Command{Ingest, Serve, LandingAudit, LandingStatus}, Group: GroupLocations,
	}, Kind: String()})

	QuarantinePrefix = register(&Setting[string]{Spec: Spec{
		Flag: "quarantine-prefix", Env: []string{"TIMELAKE_QUARANTINE_PREFIX"}, Default: landing.DefaultQuarantinePrefix,
		Help:     "where files that cannot be loaded are moved",
		Commands: []Command{Ingest, Serve, LandingGroup}, Group: GroupLocations,
	}, Kind: Convert(keyPrefix)})
)

// keyPrefix reads a relative key prefix and ends it with "/".
func keyPrefix(s string) (string, error) {
	if storage.ValidateKey(strings.TrimSuffix(s, "/")) != nil {
		return "", fmt.Errorf("%q is not a relative key prefix such as _rejected/", s)
	}
	return strings.TrimSuffix(s, "/") + "/", nil
}

// S3 connection.
var (
	Endpoint = register(&Setting[string]{Spec: Spec{
		Flag: "endpoint", Env: []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"}, // docs/configuration.md, "S3 connection"
		Help:     "S3 endpoint URL, e.g. https://t3.storage.dev",
		Commands: []Command{Global}, Group: GroupS3,
	}, Kind: String()}) // checked when the client is built (storage.ErrInvalidEndpoint) and by env check

	Region = register(&Setting[string]{Spec: Spec{
		Flag: "region", Env: []string{"AWS_REGION", "AWS_DEFAULT_REGION"},
		Help:     "S3 region; Tigris uses auto",
		Commands: []Command{Global}, Group: GroupS3,
	}, Kind: String()})

	VirtualHosted = register(&Setting[bool]{Spec: Spec{
		Flag: "s3-virtual-hosted", Env: []string{"TIMELAKE_S3_VIRTUAL_HOSTED"},
		Help:     "use virtual-hosted-style S3 addressing (default: path-style for custom endpoints)",
		Commands: []Command{Global}, Group: GroupS3,
	}, Kind: BoolValue()})

	AccessKeyID = register(&Setting[string]{Spec: Spec{
		Env: []string{"AWS_ACCESS_KEY_ID"}, Help: "access key id of static credentials",
		Commands: []Command{Global}, Group: GroupS3, Sensitivity: KeyID,
	}, Kind: String()})

	SecretAccessKey = register(&Setting[string]{Spec: Spec{
		Env: []string{"AWS_SECRET_ACCESS_KEY"}, Help: "secret access key of static credentials",
		Commands: []Command{Global}, Group: GroupS3, Sensitivity: Secret,
	}, Kind: String()})

	SessionToken = register(&Setting[string]{Spec: Spec{
		Env: []string{"AWS_SESSION_TOKEN"}, Help: "session token of temporary credentials",
		Commands: []Command{Global}, Group: GroupS3, Sensitivity: Secret,
	}, Kind: String()})

	Profile = register(&Setting[string]{Spec: Spec{
		Env: []string{"AWS_PROFILE"}, Help: "profile of ~/.aws/config when no static keys are set",
		Commands: []Command{Global}, Group: GroupS3,
	}, Kind: String()})
)

// Catalog: where the tables' versions are kept (docs/catalogs.md).
var (
	Catalog = register(&Setting[string]{Spec: Spec{
		Flag: "catalog", Env: []string{"TIMELAKE_CATALOG"}, Default: CatalogNone,
		Help:     "where the tables' versions are kept: none (metadata files in the warehouse) or rest (an Iceberg REST catalog at --catalog-uri)",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog,
	}, Kind: Enum(CatalogNone, CatalogREST)})

	CatalogURI = register(&Setting[string]{Spec: Spec{
		Flag: "catalog-uri", Env: []string{"TIMELAKE_CATALOG_URI"},
		Help:     "the REST catalog's base URI, without /v1, e.g. https://catalog.example.com/api/catalog",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog,
	}, Kind: Checked(checkHTTPURL)})

	CatalogWarehouse = register(&Setting[string]{Spec: Spec{
		Flag: "catalog-warehouse", Env: []string{"TIMELAKE_CATALOG_WAREHOUSE"},
		Help:     "the warehouse the REST catalog is asked for (a bucket URI, a catalog name or an ARN, as the server names it; default: the warehouse)",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog,
	}, Kind: String()})

	CatalogPrefix = register(&Setting[string]{Spec: Spec{
		Flag: "catalog-prefix", Env: []string{"TIMELAKE_CATALOG_PREFIX"},
		Help:     "path prefix of the REST catalog's routes (default: the one the server's /v1/config gives)",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog,
	}, Kind: String()})

	CatalogToken = register(&Setting[string]{Spec: Spec{
		Env: []string{"TIMELAKE_CATALOG_TOKEN"}, Help: "bearer token sent to the REST catalog",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog, Sensitivity: Secret,
	}, Kind: String()})

	CatalogCredential = register(&Setting[string]{Spec: Spec{
		Env: []string{"TIMELAKE_CATALOG_CREDENTIAL"}, Help: "OAuth2 client credentials of the REST catalog, client_id:client_secret, exchanged for a token",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog, Sensitivity: Secret,
	}, Kind: String()})

	CatalogOAuth2URI = register(&Setting[string]{Spec: Spec{
		Flag: "catalog-oauth2-uri", Env: []string{"TIMELAKE_CATALOG_OAUTH2_URI"},
		Help:     "token endpoint of the OAuth2 client credentials (default: <catalog-uri>/v1/oauth/tokens)",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog,
	}, Kind: Checked(checkHTTPURL)})

	CatalogScope = register(&Setting[string]{Spec: Spec{
		Flag: "catalog-scope", Env: []string{"TIMELAKE_CATALOG_SCOPE"}, Default: "catalog",
		Help:     "OAuth2 scope asked for with the client credentials",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog,
	}, Kind: String()})

	CatalogSigV4 = register(&Setting[bool]{Spec: Spec{
		Flag: "catalog-sigv4", Env: []string{"TIMELAKE_CATALOG_SIGV4"}, Default: "false",
		Help:     "sign the REST catalog's requests with AWS SigV4 and the S3 credentials (AWS Glue, S3 Tables), in --region",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog,
	}, Kind: Bool()})

	CatalogSigV4Service = register(&Setting[string]{Spec: Spec{
		Flag: "catalog-sigv4-service", Env: []string{"TIMELAKE_CATALOG_SIGV4_SERVICE"}, Default: "execute-api",
		Help:     "the signing name of SigV4 requests: glue for AWS Glue, s3tables for S3 Tables",
		Commands: []Command{Ingest, Serve, Tables, LandingGroup, Env}, Group: GroupCatalog,
	}, Kind: String()})
)

// The values of --catalog.
const (
	CatalogNone = "none"
	CatalogREST = "rest"
)

// checkHTTPURL accepts an http(s) URL with a host.
func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("expected an http(s) URL such as https://catalog.example.com, got %q", s)
	}
	return nil
}

// Table creation (ingest creates a missing table from the first file;
// tables create from a sample; upload --validate reads the time column the
// same way).
var (
	TimeColumn = register(&Setting[string]{Spec: Spec{
		Flag: "time-column", Env: []string{"TIMELAKE_TIME_COLUMN"},
		Help:     "time column of the files (default: inferred)",
		Commands: []Command{Ingest, Serve, Upload, TablesCreate}, Group: GroupCreate,
	}, Kind: String()})

	SeriesKey = register(&Setting[[]string]{Spec: Spec{
		Flag: "series-key", Env: []string{"TIMELAKE_SERIES_KEY"},
		Help:     "comma-separated columns that identify a series, when creating the table",
		Commands: []Command{Ingest, Serve, TablesCreate}, Group: GroupCreate,
	}, Kind: List()})

	Partition = register(&Setting[string]{Spec: Spec{
		Flag: "partition", Env: []string{"TIMELAKE_PARTITION"}, Default: "day",
		Help:     "time partition granularity when creating the table: hour, day or month",
		Commands: []Command{Ingest, Serve, TablesCreate}, Group: GroupCreate,
	}, Kind: Convert(granularity)})

	TimeUnit = register(&Setting[string]{Spec: Spec{
		Flag: "time-unit", Env: []string{"TIMELAKE_TIME_UNIT"},
		Help:     "unit of a numeric epoch time column: s, ms, us or ns (text times need none)",
		Commands: []Command{Ingest, Serve, Upload, TablesCreate}, Group: GroupCreate,
	}, Kind: Enum("s", "ms", "us", "ns")})

	AssumeTimezone = register(&Setting[*time.Location]{Spec: Spec{
		Flag: "assume-timezone", Env: []string{"TIMELAKE_ASSUME_TIMEZONE"}, Default: "UTC",
		Help:     "IANA zone of text times written without an offset, e.g. Europe/Berlin",
		Commands: []Command{Ingest, Serve, Upload, TablesCreate}, Group: GroupCreate,
	}, Kind: Zone()})
)

// CSV files and schema changes (docs/schema.md): how gateways write CSV,
// the types of new columns, and which schema changes files may bring.
var (
	CSVDelimiter = register(&Setting[rune]{Spec: Spec{
		Flag: "csv-delimiter", Env: []string{"TIMELAKE_CSV_DELIMITER"},
		Help:     "field separator of .csv files: one character such as ; or |, or tab (default: a comma; a file's Excel sep= first line sets its own)",
		Commands: []Command{Ingest, Serve, Upload, TablesCreate}, Group: GroupFiles,
	}, Kind: Delimiter()})

	CSVDecimalComma = register(&Setting[bool]{Spec: Spec{
		Flag: "csv-decimal-comma", Env: []string{"TIMELAKE_CSV_DECIMAL_COMMA"}, Default: "false",
		Help:     "numbers in CSV files have a decimal comma (22,5); a point in such a number is refused",
		Commands: []Command{Ingest, Serve, Upload, TablesCreate}, Group: GroupFiles,
	}, Kind: Bool()})

	CSVNull = register(&Setting[[]string]{Spec: Spec{
		Flag: "csv-null", Env: []string{"TIMELAKE_CSV_NULL"},
		Help:     "comma-separated cell texts read as null in CSV files, matched exactly, e.g. NA,NULL (default: only an empty cell)",
		Commands: []Command{Ingest, Serve, Upload, TablesCreate}, Group: GroupFiles,
	}, Kind: List()})

	Columns = register(&Setting[map[string]arrow.DataType]{Spec: Spec{
		Flag: "column", Env: []string{"TIMELAKE_COLUMNS"},
		Help:     "type of a column when the table or the column is created, NAME:TYPE with an Iceberg type (double, long, int, float, boolean, string, date, time, timestamp, timestamptz, binary, decimal(P,S)); repeat or comma-separate for several (default: inferred from the values)",
		Commands: []Command{Ingest, Serve, Upload, TablesCreate}, Group: GroupFiles,
	}, Kind: ColumnTypes()})

	Evolve = register(&Setting[decode.Evolution]{Spec: Spec{
		Flag: "evolve", Env: []string{"TIMELAKE_EVOLVE"},
		Help:     "schema changes a landing file may bring: off, add-columns (new nullable columns) or widen (also int to long, float to double, wider decimals); default: the table's timelake.evolve property, else off",
		Commands: []Command{Ingest, Serve, TablesCreate}, Group: GroupFiles,
	}, Kind: Convert(decode.ParseEvolution)})

	OnError = register(&Setting[decode.OnError]{Spec: Spec{
		Flag: "on-error", Env: []string{"TIMELAKE_ON_ERROR"},
		Help:     "what a row that cannot be loaded does to its file: file (the whole file is quarantined) or skip-rows (the file's valid rows load, the others go to a rejects file next to the quarantine); default: the table's timelake.on-error property, else file",
		Commands: []Command{Ingest, Serve, Upload}, Group: GroupFiles,
	}, Kind: Convert(decode.ParseOnError)})

	MaxBadRows = register(&Setting[decode.MaxBadRows]{Spec: Spec{
		Flag: "max-bad-rows", Env: []string{"TIMELAKE_MAX_BAD_ROWS"},
		Help:     "with --on-error skip-rows: the most rows of one file set aside, a number (100), a fraction (0.05) or a percentage (5%) of its rows; a file with more is quarantined whole; default: the table's timelake.max-bad-rows property, else 10%",
		Commands: []Command{Ingest, Serve, Upload}, Group: GroupFiles,
	}, Kind: Convert(decode.ParseMaxBadRows)})

	SourceColumn = register(&Setting[string]{Spec: Spec{
		Flag: "source-column", Env: []string{"TIMELAKE_SOURCE_COLUMN"},
		Help:     "column that holds each row's landing key (added to the table when it lacks it); default: the table's timelake.source-column property, else none",
		Commands: []Command{Ingest, Serve}, Group: GroupFiles,
	}, Kind: Checked(checkColumnName)})

	LoadTimeColumn = register(&Setting[string]{Spec: Spec{
		Flag: "load-time-column", Env: []string{"TIMELAKE_LOAD_TIME_COLUMN"},
		Help:     "column that holds the time each row's file was loaded, a timestamptz (added to the table when it lacks it); default: the table's timelake.load-time-column property, else none",
		Commands: []Command{Ingest, Serve}, Group: GroupFiles,
	}, Kind: Checked(checkColumnName)})
)

// checkColumnName accepts a column name without surrounding spaces.
func checkColumnName(s string) error {
	if s == "" || strings.TrimSpace(s) != s {
		return fmt.Errorf("expected a column name without surrounding spaces, got %q", s)
	}
	return nil
}

// CSVOf resolves the CSV dialect settings (--csv-delimiter,
// --csv-decimal-comma, --csv-null), which ingest, upload --validate and
// tables create read alike; errors are recorded in r.
func CSVOf(r *Resolver) decode.CSV {
	return decode.CSV{Delimiter: CSVDelimiter.Get(r), DecimalComma: CSVDecimalComma.Get(r), Null: CSVNull.Get(r)}
}

// Ingest.
var (
	NoCreate = register(&Setting[bool]{Spec: Spec{
		Flag: "no-create", Env: []string{"TIMELAKE_NO_CREATE"}, Default: "false",
		Help:     "fail instead of creating a missing table",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Bool()})

	MaxFiles = register(&Setting[int]{Spec: Spec{
		Flag: "max-files", Env: []string{"TIMELAKE_MAX_FILES"}, Default: "0",
		Help:     "load at most this many files in this run (0: all)",
		Commands: []Command{Ingest}, Group: GroupIngest,
	}, Kind: Int(0, math.MaxInt)})

	LeaseTTL = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "lease-ttl", Env: []string{"TIMELAKE_LEASE_TTL"}, Default: "10m",
		Help:     "how long the ingest lease lasts without renewal",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Duration(Positive, "10m")})

	Parallel = register(&Setting[int]{Spec: Spec{
		Flag: "parallel", Env: []string{"TIMELAKE_PARALLEL"}, Default: "4",
		Help:     "files downloaded, decoded and written at once",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Int(1, math.MaxInt)})

	FilesPerCommit = register(&Setting[int]{Spec: Spec{
		Flag: "files-per-commit", Env: []string{"TIMELAKE_FILES_PER_COMMIT"}, Default: "100",
		Help:     "most files (one snapshot each) per metadata write",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Int(1, math.MaxInt)})

	MemoryBudget = register(&Setting[int64]{Spec: Spec{
		Flag: "memory-budget", Env: []string{"TIMELAKE_MEMORY_BUDGET"}, Default: "64MiB",
		Help:     "decompressed bytes of landing files decoded at once; a larger file is decoded in pieces of it (more: faster on many large files, more memory)",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: ByteSize(1 << 20)})

	MaxColumns = register(&Setting[int]{Spec: Spec{
		Flag: "max-columns", Env: []string{"TIMELAKE_MAX_COLUMNS"}, Default: "10000",
		Help:     "the most columns a file may give a table, creating it or adding columns (--evolve add-columns); a wider file is quarantined before its values are read (the schema every manifest carries must also stay under 1 MiB of JSON)",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Int(1, 1_000_000)})

	ContentDedupe = register(&Setting[bool]{Spec: Spec{
		Flag: "content-dedupe", Env: []string{"TIMELAKE_CONTENT_DEDUPE"}, Default: "true",
		Help:     "report a file whose content was loaded under another key within the dedupe window as already loaded, and delete it",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Bool()})

	SettleTime = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "settle-time", Env: []string{"TIMELAKE_SETTLE_TIME"}, Default: FormatDuration(landing.DefaultSettleTime),
		Help:     "in a local landing folder: load a file only once it was not modified for this long, as it may still be being written (0: at once; S3 objects are complete when they appear)",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Duration(0, "30s")})

	OpenEndSettleTime = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "open-end-settle-time", Env: []string{"TIMELAKE_OPEN_END_SETTLE_TIME"}, Default: FormatDuration(landing.DefaultOpenEndSettleTime),
		Help:     "in a local landing folder: load a file whose end is open (a CSV or TSV last line without its line end or inside a quoted value, a gzip stream without its end, a Parquet file without its footer) only once it was not modified for this long (0: like any other file)",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Duration(0, "10m")})

	MaintenanceBudget = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "maintenance-budget", Env: []string{"TIMELAKE_MAINTENANCE_BUDGET"}, Default: "10s",
		Help:     "time spent on table maintenance after loading (compaction, snapshot expiry, orphan files; a long run also expires snapshots between its commits); 0 for none of either (run tables maintain from cron)",
		Commands: []Command{Ingest, Serve}, Group: GroupIngest,
	}, Kind: Duration(0, "10s")})
)

// Serve.
var (
	Listen = register(&Setting[string]{Spec: Spec{
		Flag: "listen", Env: []string{"TIMELAKE_LISTEN"}, Default: "127.0.0.1:8080",
		Help:     "address serve answers on, host:port; a non-loopback address needs TIMELAKE_WEBHOOK_TOKEN or TIMELAKE_WEBHOOK_USER and TIMELAKE_WEBHOOK_PASSWORD",
		Commands: []Command{Serve}, Group: GroupServe,
	}, Kind: Checked(checkListen)})

	Sweep = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "sweep", Env: []string{"TIMELAKE_SWEEP"}, Default: "5m",
		Help:     "list the landing bucket this often and load what no notification announced (the first sweep runs at start)",
		Commands: []Command{Serve}, Group: GroupServe,
	}, Kind: Duration(time.Second, "5m")})

	WebhookToken = register(&Setting[string]{Spec: Spec{
		Env: []string{"TIMELAKE_WEBHOOK_TOKEN"}, Help: "bearer token that notifications must carry (Authorization: Bearer)",
		Commands: []Command{Serve}, Group: GroupServe, Sensitivity: Secret,
	}, Kind: String()})

	WebhookUser = register(&Setting[string]{Spec: Spec{
		Env: []string{"TIMELAKE_WEBHOOK_USER"}, Help: "user name of basic authentication of notifications, with TIMELAKE_WEBHOOK_PASSWORD",
		Commands: []Command{Serve}, Group: GroupServe,
	}, Kind: String()})

	WebhookPassword = register(&Setting[string]{Spec: Spec{
		Env: []string{"TIMELAKE_WEBHOOK_PASSWORD"}, Help: "password of basic authentication of notifications, with TIMELAKE_WEBHOOK_USER",
		Commands: []Command{Serve}, Group: GroupServe, Sensitivity: Secret,
	}, Kind: String()})
)

// Monitoring: alerts, gateway figures and metrics (docs/operations.md).
var (
	NotifyURL = register(&Setting[string]{Spec: Spec{
		Flag: "notify-url", Env: []string{"TIMELAKE_NOTIFY_URL"},
		Help:     "webhook that gets an alert (JSON with a Slack-compatible text field) on a quarantine, a failed run, a silent gateway or stuck files; printed as its host only (prefer the variable: a flag shows in ps)",
		Commands: []Command{Ingest, Serve, LandingAudit, LandingStatus}, Group: GroupMonitor, Sensitivity: SecretURL,
	}, Kind: Checked(alert.CheckURL)})

	MetricsFile = register(&Setting[string]{Spec: Spec{
		Flag: "metrics-file", Env: []string{"TIMELAKE_METRICS_FILE"},
		Help:     "after each run, write the gateway figures and the run's as Prometheus metrics to this file, for node_exporter's textfile collector (a name ending in .prom)",
		Commands: []Command{Ingest, LandingStatus}, Group: GroupMonitor,
	}, Kind: Checked(checkMetricsFile)})

	ExpectEvery = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "expect-every", Env: []string{"TIMELAKE_EXPECT_EVERY"},
		Help:     "how often each gateway lands a file; one that lands none for twice as long is silent (default: the table's timelake.expect-every, else none)",
		Commands: []Command{Ingest, Serve, LandingStatus}, Group: GroupMonitor,
	}, Kind: Duration(Positive, "1m")})

	GatewayDepth = register(&Setting[int]{Spec: Spec{
		Flag: "gateway-depth", Env: []string{"TIMELAKE_GATEWAY_DEPTH"}, Default: "0",
		Help:     "how many folders of a landing key name its gateway; 0: the folder that holds the file (site-berlin/gw-7 of site-berlin/gw-7/x.csv, the keys of timelake upload); 1: its first folder (gw-7 of gw-7/2026/01/05/x.csv)",
		Commands: []Command{Ingest, Serve, LandingAudit, LandingStatus}, Group: GroupMonitor,
	}, Kind: Int(0, 16)})

	StuckAfter = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "stuck-after", Env: []string{"TIMELAKE_STUCK_AFTER"}, Default: "15m",
		Help:     "a landing file not loaded after this long is stuck (audit finding, alert)",
		Commands: []Command{Ingest, Serve, LandingAudit, LandingStatus}, Group: GroupMonitor,
	}, Kind: Duration(Positive, "15m")})
)

// checkMetricsFile accepts a file name node_exporter's textfile collector
// reads: one ending in .prom.
func checkMetricsFile(s string) error {
	if !strings.HasSuffix(s, ".prom") || strings.HasSuffix(s, "/.prom") || s == ".prom" {
		return fmt.Errorf("expected a file name ending in .prom (node_exporter's textfile collector reads only those), got %q", s)
	}
	return nil
}

// checkListen accepts host:port with a port number (the host may be empty:
// every address).
func checkListen(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("expected host:port such as 127.0.0.1:8080 or :8080, got %q", s)
	}
	return nil
}

// Upload.
var (
	Gateway = register(&Setting[string]{Spec: Spec{
		Flag: "gateway", Env: []string{"TIMELAKE_GATEWAY"},
		Help:     "gateway name, the first segment of generated keys",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: Checked(upload.ValidateGateway)})

	UploadPrefix = register(&Setting[string]{Spec: Spec{
		Flag: "prefix", Env: []string{"TIMELAKE_UPLOAD_PREFIX"},
		Help:     "key prefix in front of every key, e.g. site-3",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: Convert(upload.NormalizePrefix)})

	UploadTime = register(&Setting[upload.TimeSource]{Spec: Spec{
		Flag: "time", Env: []string{"TIMELAKE_UPLOAD_TIME"}, Default: string(upload.TimeModified),
		Help:     "time in generated keys: mtime (the file's modification time, stable across retries) or now",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: Convert(func(s string) (upload.TimeSource, error) {
		v, err := Enum(string(upload.TimeModified), string(upload.TimeNow)).Parse(s)
		return upload.TimeSource(v), err
	})})

	Spool = register(&Setting[string]{Spec: Spec{
		Flag: "spool", Env: []string{"TIMELAKE_SPOOL"},
		Help:     "upload every file of this folder, oldest first, then delete it",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: String()})

	SpoolDone = register(&Setting[string]{Spec: Spec{
		Flag: "done", Env: []string{"TIMELAKE_SPOOL_DONE"},
		Help:     "with --spool: move uploaded files to this folder instead of deleting them",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: String()})

	SpoolMinAge = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "min-age", Env: []string{"TIMELAKE_SPOOL_MIN_AGE"}, Default: FormatDuration(landing.DefaultSettleTime),
		Help:     "with --spool: upload a file only once it was not modified for this long, as it may still be being written (0: at once)",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: Duration(0, "30s")})

	SpoolOpenEndMinAge = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "open-end-min-age", Env: []string{"TIMELAKE_SPOOL_OPEN_END_MIN_AGE"}, Default: FormatDuration(landing.DefaultOpenEndSettleTime),
		Help:     "with --spool: upload a file whose end is open (a CSV or TSV last line without its line end or inside a quoted value, a gzip stream without its end, a Parquet file without its footer) only once it was not modified for this long (0: like any other file)",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: Duration(0, "10m")})

	Gzip = register(&Setting[bool]{Spec: Spec{
		Flag: "gzip", Env: []string{"TIMELAKE_UPLOAD_GZIP"}, Default: "false",
		Help:     "gzip CSV and TSV files on the way (the key ends in .gz)",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: Bool()})

	UploadParallel = register(&Setting[int]{Spec: Spec{
		Flag: "parallel", Env: []string{"TIMELAKE_UPLOAD_PARALLEL"}, Default: strconv.Itoa(upload.DefaultParallel),
		Help:     "files uploaded at once (output stays in file order)",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: Int(1, math.MaxInt)})

	Validate = register(&Setting[bool]{Spec: Spec{
		Flag: "validate", Env: []string{"TIMELAKE_UPLOAD_VALIDATE"}, Default: "true",
		Help:     "check each file (header, rows, time column) before sending it; --validate=false to skip",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: Bool()})

	ProfileFile = register(&Setting[string]{Spec: Spec{
		Flag: "profile-file", Env: []string{"TIMELAKE_UPLOAD_PROFILE"},
		Help:     "validate each file with a source profile exported by timelake tables profile (its settings, the table's schema), as the poller will read it; every key must be one the profile matches (default: the table's profiles when --warehouse and --table are set, else the file's own settings)",
		Commands: []Command{Upload}, Group: GroupUpload,
	}, Kind: String()})
)

// Tables.
var (
	ExpireOlderThan = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "older-than", Env: []string{"TIMELAKE_EXPIRE_OLDER_THAN"},
		Help:     "expire snapshots older than this (90m, 48h, 7d); default: the table's history.expire.max-snapshot-age-ms, else 5d",
		Commands: []Command{TablesExpire}, Group: GroupTables,
	}, Kind: Duration(Positive, "7d")})

	ExpireRetainLast = register(&Setting[int]{Spec: Spec{
		Flag: "retain-last", Env: []string{"TIMELAKE_EXPIRE_RETAIN_LAST"}, Default: "0",
		Help:     "always keep the newest N snapshots; 0: the table's history.expire.min-snapshots-to-keep, else 1",
		Commands: []Command{TablesExpire}, Group: GroupTables,
	}, Kind: Int(0, math.MaxInt)})
)

// Global.
var (
	EnvFile = register(&Setting[string]{Spec: Spec{
		Flag: "env-file", Env: []string{"TIMELAKE_ENV_FILE"},
		Help:     "read settings from this KEY=value file (e.g. timelake.env); the environment wins over it",
		Commands: []Command{Global}, Group: GroupGlobal,
	}, Kind: String()}) // read from the flag or the environment only

	LogLevel = register(&Setting[string]{Spec: Spec{
		Flag: "log-level", Env: []string{"TIMELAKE_LOG_LEVEL"}, Default: "warn",
		Help:     "stderr log level: debug, info, warn or error",
		Commands: []Command{Global}, Group: GroupGlobal,
	}, Kind: Enum("debug", "info", "warn", "error")})

	CacheDir = register(&Setting[string]{Spec: Spec{
		Flag: "cache-dir", Env: []string{"TIMELAKE_CACHE_DIR"},
		Help:     "folder that keeps files read from the warehouse that never change (the load history), so runs download each once (default: the user cache folder, e.g. ~/.cache/timelake; off: none)",
		Commands: []Command{Global}, Group: GroupGlobal,
	}, Kind: String()})
)

// Per-run flags: no variable (GroupPerRun says why).
var (
	JSON = register(&Setting[bool]{Spec: Spec{
		Flag: "json", Default: "false", Help: "print one JSON document on stdout (logs stay on stderr)",
		Commands: []Command{Global}, Group: GroupPerRun,
	}, Kind: Bool()})

	DryRun = register(&Setting[bool]{Spec: Spec{
		Flag: "dry-run", Default: "false", Help: "list what would be done; change nothing",
		Commands: []Command{Ingest, TablesExpire, TablesMaintain, TablesAlter, TablesDelete, TablesRollback, LandingRequeue, LandingDiscard}, Group: GroupPerRun,
	}, Kind: Bool()})

	BreakLease = register(&Setting[bool]{Spec: Spec{
		Flag: "break-lease", Default: "false",
		Help:     "remove the leases that block this run (printing who held them and since when), then load",
		Commands: []Command{Ingest}, Group: GroupPerRun,
	}, Kind: Bool()})

	Key = register(&Setting[string]{Spec: Spec{
		Flag: "key", Help: "explicit object key for a single file, instead of the generated one",
		Commands: []Command{Upload}, Group: GroupPerRun,
	}, Kind: Checked(storage.ValidateKey)})

	FromFile = register(&Setting[string]{Spec: Spec{
		Flag: "from-file", Help: "local CSV, TSV, JSON (optionally .gz) or Parquet file whose schema the table takes (required)",
		Commands: []Command{TablesCreate}, Group: GroupPerRun,
	}, Kind: String()})

	Limit = register(&Setting[int]{Spec: Spec{
		Flag: "limit", Default: "0", Help: "show at most N, newest first (0: all)",
		Commands: []Command{TablesSnapshots, TablesBatches, TablesHistory}, Group: GroupPerRun,
	}, Kind: Int(0, math.MaxInt)})

	SinceTime = register(&Setting[time.Time]{Spec: Spec{
		Flag: "since", Help: "only those committed since an RFC 3339 time (2026-01-05T00:00:00Z) or a duration ago (90m, 24h, 7d)",
		Commands: []Command{TablesSnapshots, TablesBatches, TablesHistory}, Group: GroupPerRun,
	}, Kind: Since(time.Now)})

	BatchPrefix = register(&Setting[string]{Spec: Spec{
		Flag: "prefix", Help: "only batch ids that start with this prefix, e.g. gateway-7/",
		Commands: []Command{TablesBatches, TablesHistory}, Group: GroupPerRun,
	}, Kind: String()})

	HistoryStatus = register(&Setting[string]{Spec: Spec{
		Flag: "status", Help: "only files with this outcome: loaded, duplicate or rejected; or only the deletes of rows: deleted",
		Commands: []Command{TablesHistory}, Group: GroupPerRun,
	}, Kind: Enum("loaded", "duplicate", "rejected", "deleted", "restored")}) // lake.OutcomeLoaded and its kin (a test of the ingest command compares them)

	AuditSince = register(&Setting[time.Time]{Spec: Spec{
		Flag: "since", Default: "24h", Help: "report the files serve loaded by its sweep since an RFC 3339 time, a date, or a duration ago",
		Commands: []Command{LandingAudit}, Group: GroupPerRun,
	}, Kind: Since(time.Now)})

	AuditLimit = register(&Setting[int]{Spec: Spec{
		Flag: "limit", Default: "20", Help: "list at most N files of each finding (all are counted; 0: all)",
		Commands: []Command{LandingAudit}, Group: GroupPerRun,
	}, Kind: Int(0, math.MaxInt)})

	MaintainBudget = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "budget", Default: "0s", Help: "end the round within this long plus 2s, e.g. 2m (0: no bound)",
		Commands: []Command{TablesMaintain}, Group: GroupPerRun,
	}, Kind: Duration(0, "2m")})

	Orphans = register(&Setting[bool]{Spec: Spec{
		Flag: "orphans", Default: "false", Help: "look for orphan files now (else at most once an hour)",
		Commands: []Command{TablesMaintain}, Group: GroupPerRun,
	}, Kind: Bool()})

	SetProperty = register(&Setting[[]string]{Spec: Spec{
		Flag: "set", Help: "set a table property, KEY=VALUE; repeat for several",
		Commands: []Command{TablesAlter}, Group: GroupPerRun,
	}, Kind: Repeated("KEY=VALUE", func(s string) error {
		if k, _, ok := strings.Cut(s, "="); !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("expected KEY=VALUE such as timelake.snapshot-retention=1h, got %q", s)
		}
		return nil
	})})

	UnsetProperty = register(&Setting[[]string]{Spec: Spec{
		Flag: "unset", Help: "remove a table property (its default applies); repeat for several",
		Commands: []Command{TablesAlter}, Group: GroupPerRun,
	}, Kind: Repeated("KEY", func(s string) error {
		if strings.Contains(s, "=") {
			return fmt.Errorf("expected a property name such as timelake.snapshot-retention, got %q", s)
		}
		return nil
	})})

	DeleteWhere = register(&Setting[[]string]{Spec: Spec{
		Flag: "where", Help: "delete only rows whose COLUMN holds VALUE; the same column again means either value, different columns must all match",
		Commands: []Command{TablesDelete}, Group: GroupPerRun,
	}, Kind: Repeated("COLUMN=VALUE", func(s string) error {
		if c, _, ok := strings.Cut(s, "="); !ok || strings.TrimSpace(c) == "" {
			return fmt.Errorf("expected COLUMN=VALUE such as device=gw-7, got %q", s)
		}
		return nil
	})})

	DeleteFrom = register(&Setting[time.Time]{Spec: Spec{
		Flag: "from", Help: "delete only rows whose time is at or after this RFC 3339 time (2026-01-05T10:00:00Z)",
		Commands: []Command{TablesDelete}, Group: GroupPerRun, Once: true,
	}, Kind: Instant()})

	DeleteTo = register(&Setting[time.Time]{Spec: Spec{
		Flag: "to", Help: "delete only rows whose time is before this RFC 3339 time (2026-01-05T13:00:00Z)",
		Commands: []Command{TablesDelete}, Group: GroupPerRun, Once: true,
	}, Kind: Instant()})

	DeleteBatchID = register(&Setting[[]string]{Spec: Spec{
		Flag: "batch-id", Help: "delete only rows the landing file of this key brought (repeat it for several files: any of them): through the table's source column (timelake.source-column), else the data files its snapshot added while they are live; refused when neither is exact",
		Commands: []Command{TablesDelete}, Group: GroupPerRun,
	}, Kind: Repeated("KEY", func(s string) error {
		if s == "" {
			return errors.New("expected a landing key such as gateway-7/20260105T1000.csv")
		}
		return nil
	})})

	Yes = register(&Setting[bool]{Spec: Spec{
		Flag: "yes", Default: "false", Help: "do not ask for confirmation (scripts; without it, a terminal is asked)",
		Commands: []Command{TablesDelete}, Group: GroupPerRun,
	}, Kind: Bool()})

	AllQuarantined = register(&Setting[bool]{Spec: Spec{
		Flag: "all", Default: "false", Help: "take every quarantined file (requeue: except those whose report says the file itself is broken)",
		Commands: []Command{LandingRequeue, LandingDiscard}, Group: GroupPerRun,
	}, Kind: Bool()})

	RejectedPrefix = register(&Setting[string]{Spec: Spec{
		Flag: "prefix", Help: "only quarantined files whose landing key starts with this prefix, e.g. gateway-7/",
		Commands: []Command{LandingRejected, LandingRequeue, LandingDiscard}, Group: GroupPerRun,
	}, Kind: String()})

	RejectedReason = register(&Setting[string]{Spec: Spec{
		Flag: "reason", Help: "only quarantined files whose reason holds this text, in any case, e.g. delimiter",
		Commands: []Command{LandingRejected, LandingRequeue, LandingDiscard}, Group: GroupPerRun,
	}, Kind: String()})

	RejectedSince = register(&Setting[time.Time]{Spec: Spec{
		Flag: "since", Help: "only files quarantined since an RFC 3339 time, a date, or a duration ago (90m, 24h, 7d)",
		Commands: []Command{LandingRejected, LandingRequeue, LandingDiscard}, Group: GroupPerRun,
	}, Kind: Since(time.Now)})

	DiscardDelete = register(&Setting[bool]{Spec: Spec{
		Flag: "delete", Default: "false", Help: "delete the files and their reports instead of archiving them below _timelake/discarded/",
		Commands: []Command{LandingDiscard}, Group: GroupPerRun,
	}, Kind: Bool()})

	CheckTimeout = register(&Setting[time.Duration]{Spec: Spec{
		Flag: "timeout", Default: "5s", Help: "time limit of each network step (connect, each S3 call)",
		Commands: []Command{EnvCheck}, Group: GroupPerRun,
	}, Kind: Duration(Positive, "5s")})
)
