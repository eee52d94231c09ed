package interop

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// IcebirdTable is what the harness icebird/read-table.mjs prints for a table.
type IcebirdTable struct {
	TableURL      string            `json:"table_url"`
	MetadataFile  string            `json:"metadata_file"` // vN.metadata.json named by version-hint.text, or given
	FormatVersion int               `json:"format_version"`
	Location      string            `json:"location"`
	HasSnapshot   bool              `json:"has_snapshot"`
	Properties    map[string]string `json:"properties"`
	Columns       []Column          `json:"columns"`
	Files         []IcebirdFile     `json:"files"`
	RowCount      int               `json:"row_count"`
	RawRows       [][]any           `json:"rows"`
	AvroDeflate   struct {
		Blocks          int `json:"blocks"`
		StockFailures   int `json:"stockFailures"`
		StockMismatches int `json:"stockMismatches"`
	} `json:"avro_deflate"`
}

// IcebirdFile is a live data file as icebird's manifest reader sees it.
// Bounds and counts are keyed by field id; bounds are hex.
type IcebirdFile struct {
	Manifest        string            `json:"manifest"`
	Status          int               `json:"status"`
	Content         int               `json:"content"`
	Path            string            `json:"path"`
	Format          string            `json:"format"`
	RecordCount     int64             `json:"record_count"`
	FileSizeInBytes int64             `json:"file_size_in_bytes"`
	Partition       map[string]any    `json:"partition"`
	ValueCounts     map[string]string `json:"value_counts"`
	NullValueCounts map[string]string `json:"null_value_counts"`
	LowerBounds     map[string]string `json:"lower_bounds"`
	UpperBounds     map[string]string `json:"upper_bounds"`
}

// Bounds decodes the file's lower and upper bound of a column.
func (f IcebirdFile) Bounds(c Column) (lower, upper any, ok bool, err error) {
	lo, ok1 := f.LowerBounds[strconv.Itoa(c.ID)]
	hi, ok2 := f.UpperBounds[strconv.Itoa(c.ID)]
	if !ok1 || !ok2 {
		return nil, nil, false, nil
	}
	for _, p := range []struct {
		hex string
		dst *any
	}{{lo, &lower}, {hi, &upper}} {
		b, err := hex.DecodeString(p.hex)
		if err != nil {
			return nil, nil, false, err
		}
		if *p.dst, err = DecodeBound(b, c.Type); err != nil {
			return nil, nil, false, err
		}
	}
	return lower, upper, true, nil
}

// Rows converts the harness's JSON rows to canonical rows. icebird returns
// times as JavaScript Dates (milliseconds): they come back as microseconds
// with a zero sub-millisecond part, so compare them with tsDiv 1000.
func (t *IcebirdTable) Rows() ([]Row, error) {
	out := make([]Row, len(t.RawRows))
	for r, raw := range t.RawRows {
		if len(raw) != len(t.Columns) {
			return nil, fmt.Errorf("row %d has %d values for %d columns", r, len(raw), len(t.Columns))
		}
		row := make(Row, len(raw))
		for i, v := range raw {
			var err error
			if row[i], err = icebirdValue(v, t.Columns[i].Type); err != nil {
				return nil, fmt.Errorf("row %d column %s: %w", r, t.Columns[i].Name, err)
			}
			if ms, ok := row[i].(int64); ok && isTimestamp(t.Columns[i].Type) {
				row[i] = ms * 1000
			}
		}
		out[r] = row
	}
	return out, nil
}

func icebirdValue(v any, typ string) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch typ {
	case "timestamptz", "timestamp", "long", "int", "date":
		switch x := v.(type) {
		case json.Number:
			return x.Int64()
		case string:
			return strconv.ParseInt(x, 10, 64)
		}
	case "double", "float":
		switch x := v.(type) {
		case json.Number:
			return x.Float64()
		case string: // NaN, Infinity
			return strconv.ParseFloat(x, 64)
		}
	case "string":
		if s, ok := v.(string); ok {
			return s, nil
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unexpected %T %v for type %s", v, v, typ)
}

// ErrNoHarness is returned when node or the harness's node_modules are
// missing (run `npm ci` in test/interop/icebird).
var ErrNoHarness = errors.New("icebird harness not installed")

// Icebird runs the Node harness (icebird/read-table.mjs).
type Icebird struct {
	// Dir is test/interop/icebird (package.json, node_modules, read-table.mjs).
	Dir string
	// S3Proxy is the base URL of an S3Proxy for tables on S3 ("" for local
	// tables only).
	S3Proxy string
}

// Check reports ErrNoHarness when node or node_modules/icebird are missing.
func (ib Icebird) Check() error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("%w: node not found in PATH", ErrNoHarness)
	}
	if _, err := os.Stat(filepath.Join(ib.Dir, "node_modules", "icebird", "package.json")); err != nil {
		return fmt.Errorf("%w: run `npm ci` in %s", ErrNoHarness, ib.Dir)
	}
	return nil
}

// Read reads the table at tableURL (file:// or s3://) with icebird, from
// the metadata file that metadata/version-hint.text names.
func (ib Icebird) Read(ctx context.Context, tableURL string) (*IcebirdTable, error) {
	return ib.ReadAt(ctx, tableURL, "")
}

// ReadAt reads the table at tableURL from its metadata file named
// metadataFile (vN.metadata.json in its metadata/ folder; "" for the one
// the version hint names).
func (ib Icebird) ReadAt(ctx context.Context, tableURL, metadataFile string) (*IcebirdTable, error) {
	if err := ib.Check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	args := []string{"read-table.mjs", tableURL}
	if metadataFile != "" {
		args = append(args, metadataFile)
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = ib.Dir
	cmd.Env = append(os.Environ(), "TIMELAKE_ICEBIRD_S3_PROXY="+ib.S3Proxy)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("icebird read %s: %w\n%s", tableURL, err, errOut.String())
	}
	dec := json.NewDecoder(&out)
	dec.UseNumber()
	var t IcebirdTable
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("icebird read %s: decode output: %w", tableURL, err)
	}
	return &t, nil
}

// S3Proxy serves GET and HEAD /<bucket>/<key> from an S3 bucket through the
// SDK (which signs the requests), passing Range through: the harness sends
// icebird's S3 requests here instead of to AWS.
type S3Proxy struct {
	Client *s3.Client
}

// ServeHTTP implements http.Handler.
func (p S3Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	bucket, key, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if !ok || bucket == "" || key == "" {
		http.Error(w, "want /<bucket>/<key>", http.StatusBadRequest)
		return
	}
	in := &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if rg := r.Header.Get("Range"); rg != "" {
		in.Range = aws.String(rg)
	}
	out, err := p.Client.GetObject(r.Context(), in)
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) || strings.Contains(err.Error(), "StatusCode: 404") {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer out.Body.Close()
	status := http.StatusOK
	if out.ContentRange != nil {
		w.Header().Set("Content-Range", *out.ContentRange)
		status = http.StatusPartialContent
	}
	if out.ContentLength != nil {
		w.Header().Set("Content-Length", strconv.FormatInt(*out.ContentLength, 10))
	}
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = io.Copy(w, out.Body)
	}
}
