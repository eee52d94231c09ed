package envcheck_test

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeS3 speaks just enough path-style S3 for env check (ListBuckets,
// ListObjectsV2, PUT, GET, HEAD, DELETE) and, like a store without
// conditional writes, never answers 412: If-None-Match is ignored. Every
// bucket exists. It checks no signature.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string][]byte // "bucket/key" -> body
	// dateOffset shifts the Date header from the real clock.
	dateOffset time.Duration
	// ifNoneMatchSeen counts PUTs that carried If-None-Match: *.
	ifNoneMatchSeen int
}

func newFakeS3(t *testing.T, dateOffset time.Duration) (*fakeS3, *httptest.Server) {
	f := &fakeS3{objects: map[string][]byte{}, dateOffset: dateOffset}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeS3) keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.objects {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type xmlContents struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int    `xml:"Size"`
}

type xmlListResult struct {
	XMLName     xml.Name      `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name        string        `xml:"Name"`
	Prefix      string        `xml:"Prefix"`
	KeyCount    int           `xml:"KeyCount"`
	MaxKeys     int           `xml:"MaxKeys"`
	IsTruncated bool          `xml:"IsTruncated"`
	Contents    []xmlContents `xml:"Contents"`
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Date", time.Now().Add(f.dateOffset).UTC().Format(http.TimeFormat))
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case bucket == "" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`+
			`<Owner><ID>fake</ID></Owner><Buckets><Bucket><Name>any</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>`)
	case key == "" && r.Method == http.MethodGet:
		prefix := r.URL.Query().Get("prefix")
		res := xmlListResult{Name: bucket, Prefix: prefix, MaxKeys: 1000}
		var ks []string
		for k := range f.objects {
			if b, objKey, _ := strings.Cut(k, "/"); b == bucket && strings.HasPrefix(objKey, prefix) {
				ks = append(ks, objKey)
			}
		}
		sort.Strings(ks)
		for _, k := range ks {
			res.Contents = append(res.Contents, xmlContents{Key: k, LastModified: "2026-01-01T00:00:00.000Z",
				ETag: `"e"`, Size: len(f.objects[bucket+"/"+k])})
		}
		res.KeyCount = len(res.Contents)
		w.Header().Set("Content-Type", "application/xml")
		_ = xml.NewEncoder(w).Encode(res)
	case r.Method == http.MethodPut:
		if r.Header.Get("If-None-Match") == "*" {
			f.ifNoneMatchSeen++
		}
		b, _ := io.ReadAll(r.Body)
		f.objects[path] = b
		w.Header().Set("ETag", `"e"`)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		b, ok := f.objects[path]
		if !ok {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotFound)
			if r.Method == http.MethodGet {
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>no such key</Message><Key>%s</Key></Error>`, key)
			}
			return
		}
		w.Header().Set("ETag", `"e"`)
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.Header().Set("Last-Modified", "Thu, 01 Jan 2026 00:00:00 GMT")
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	case r.Method == http.MethodDelete:
		delete(f.objects, path)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}
