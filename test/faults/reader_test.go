package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/avro/ocf"

	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/testutil/catalogtest"
)

// tableState is what the suite's own reader found in a table. It reads the
// Iceberg metadata JSON, the Avro manifest lists and manifests, and the
// Parquet data files straight from the S3 server (not through the proxy,
// not through timelake or iceberg-go; of a table in a REST catalog, only
// the current metadata file's location is asked of the catalog, with
// iceberg-go's client), so a bug in timelake's reading cannot hide one in
// its writing.
type tableState struct {
	version   int
	snapshots int
	rowIDs    []string // the row_id column of every live row, sorted
	dataFiles int      // data files of the current snapshot
	// files are the row ids of each data file of the current snapshot, by
	// key.
	files  map[string][]string
	strays []string // data files, manifests and manifest lists that no snapshot references
}

// readTable reads the table <ns>/<name> below warehouse prefix wh in
// bucket. A table without metadata yet has version 0.
func readTable(t testing.TB, c *s3.Client, bucket, wh, ns, name string) tableState {
	t.Helper()
	root := strings.Trim(wh+"/"+ns+"/"+name, "/")
	var st tableState
	versionRE := regexp.MustCompile(`^v(\d+)\.metadata\.json$`)
	var dataKeys, avroKeys []string
	for _, key := range listKeys(t, c, bucket, root+"/") {
		rel := strings.TrimPrefix(key, root+"/")
		if m := versionRE.FindStringSubmatch(strings.TrimPrefix(rel, "metadata/")); m != nil && strings.HasPrefix(rel, "metadata/") {
			if v, _ := strconv.Atoi(m[1]); v > st.version {
				st.version = v
			}
		}
		if strings.HasPrefix(rel, "data/") && strings.HasSuffix(rel, ".parquet") {
			dataKeys = append(dataKeys, key)
		}
		if strings.HasPrefix(rel, "metadata/") && strings.HasSuffix(rel, ".avro") {
			avroKeys = append(avroKeys, key)
		}
	}
	if st.version == 0 {
		st.strays = append(dataKeys, avroKeys...)
		return st
	}
	return readMetadata(t, c, bucket, fmt.Sprintf("%s/metadata/v%d.metadata.json", root, st.version), st, dataKeys, avroKeys)
}

// readCatalogTable reads the table whose current metadata file a REST
// catalog names (loadTable, with iceberg-go's REST client), at root (its
// folder) in bucket.
func readCatalogTable(t testing.TB, c *s3.Client, srv catalogtest.Server, warehouse string, n lake.TableName) tableState {
	t.Helper()
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "faults-reader", srv.URI, rest.WithWarehouseLocation(warehouse), rest.WithCredential(srv.Credential()))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{n.Namespace, n.Name})
	if err != nil {
		t.Fatalf("load %s through the catalog: %v", n, err)
	}
	bucket, metaKey := splitURI(t, tbl.MetadataLocation())
	root := n.Namespace + "/" + n.Name
	var dataKeys, avroKeys []string
	for _, key := range listKeys(t, c, bucket, root+"/") {
		rel := strings.TrimPrefix(key, root+"/")
		if strings.HasPrefix(rel, "data/") && strings.HasSuffix(rel, ".parquet") {
			dataKeys = append(dataKeys, key)
		}
		if strings.HasPrefix(rel, "metadata/") && strings.HasSuffix(rel, ".avro") {
			avroKeys = append(avroKeys, key)
		}
	}
	var st tableState
	if m := regexp.MustCompile(`/v(\d+)(-[^/]*)?\.metadata\.json$`).FindStringSubmatch(metaKey); m != nil {
		st.version, _ = strconv.Atoi(m[1])
	}
	return readMetadata(t, c, bucket, metaKey, st, dataKeys, avroKeys)
}

// readMetadata reads the metadata file at metaKey and what its snapshots
// reference; dataKeys and avroKeys are the table's data files and Avro
// files, for the strays.
func readMetadata(t testing.TB, c *s3.Client, bucket, metaKey string, st tableState, dataKeys, avroKeys []string) tableState {
	t.Helper()
	var meta struct {
		Current   *int64 `json:"current-snapshot-id"`
		Snapshots []struct {
			ID           int64  `json:"snapshot-id"`
			ManifestList string `json:"manifest-list"`
		} `json:"snapshots"`
	}
	b := getObject(t, c, bucket, metaKey)
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatalf("metadata %s: %v", metaKey, err)
	}
	st.snapshots = len(meta.Snapshots)

	manifests := map[string][]manifestEntry{} // read once each
	referenced := map[string]bool{}
	for _, s := range meta.Snapshots {
		current := meta.Current != nil && *meta.Current == s.ID
		_, listKey := splitURI(t, s.ManifestList)
		referenced[listKey] = true
		for _, mf := range readAvro(t, c, bucket, s.ManifestList) {
			if asInt(mf["content"]) != 0 { // delete manifests: timelake writes none
				t.Fatalf("snapshot %d lists a delete manifest", s.ID)
			}
			p := mf["manifest_path"].(string)
			_, mfKey := splitURI(t, p)
			referenced[mfKey] = true
			entries, ok := manifests[p]
			if !ok {
				for _, e := range readAvro(t, c, bucket, p) {
					df := e["data_file"].(map[string]any)
					entries = append(entries, manifestEntry{status: asInt(e["status"]), path: df["file_path"].(string),
						records: asInt(df["record_count"])})
				}
				manifests[p] = entries
			}
			for _, e := range entries {
				if e.status == 2 { // DELETED in this manifest's snapshot
					continue
				}
				_, key := splitURI(t, e.path)
				referenced[key] = true
				if current {
					st.dataFiles++
					ids := readRowIDs(t, c, bucket, key)
					if int64(len(ids)) != e.records {
						t.Fatalf("%s: %d rows, the manifest says %d", e.path, len(ids), e.records)
					}
					st.rowIDs = append(st.rowIDs, ids...)
					if st.files == nil {
						st.files = map[string][]string{}
					}
					st.files[key] = ids
				}
			}
		}
	}
	slices.Sort(st.rowIDs)
	for _, k := range append(dataKeys, avroKeys...) {
		if !referenced[k] {
			st.strays = append(st.strays, k)
		}
	}
	return st
}

type manifestEntry struct {
	status  int64
	path    string
	records int64
}

func asInt(v any) int64 {
	switch n := v.(type) {
	case int32:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return -1
}

// splitURI splits s3://bucket/key.
func splitURI(t testing.TB, uri string) (bucket, key string) {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil || (u.Scheme != "s3" && u.Scheme != "s3a") {
		t.Fatalf("not an s3:// location: %q", uri)
	}
	return u.Host, strings.TrimPrefix(u.Path, "/")
}

func readAvro(t testing.TB, c *s3.Client, bucket, uri string) []map[string]any {
	t.Helper()
	b, key := splitURI(t, uri)
	if b != bucket {
		t.Fatalf("%s is outside the lake bucket %s", uri, bucket)
	}
	r, err := ocf.NewReader(bytes.NewReader(getObject(t, c, bucket, key)))
	if err != nil {
		t.Fatalf("%s: %v", uri, err)
	}
	var out []map[string]any
	for {
		var rec map[string]any
		if err := r.Decode(&rec); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		out = append(out, rec)
	}
}

// readRowIDs reads the row_id column of a Parquet file with arrow-go's
// Parquet reader.
func readRowIDs(t testing.TB, c *s3.Client, bucket, key string) []string {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(getObject(t, c, bucket, key)))
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	defer tbl.Release()
	idx := tbl.Schema().FieldIndices("row_id")
	if len(idx) != 1 {
		t.Fatalf("%s has no row_id column", key)
	}
	var ids []string
	for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
		col := chunk.(*array.String)
		for i := range col.Len() {
			ids = append(ids, col.Value(i))
		}
	}
	return ids
}

func getObject(t testing.TB, c *s3.Client, bucket, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	return b
}

func listKeys(t testing.TB, c *s3.Client, bucket, prefix string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}
