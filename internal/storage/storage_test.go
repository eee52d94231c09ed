package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// stores returns the Store implementations that must pass the same
// contract: a local folder and a real S3 server.
func stores(t *testing.T) map[string]func(t *testing.T) storage.Store {
	return map[string]func(t *testing.T) storage.Store{
		"local": func(t *testing.T) storage.Store {
			s, err := storage.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"s3": func(t *testing.T) storage.Store {
			srv := s3test.FromEnv(t)
			return storage.NewS3Store(srv.Client(t), srv.NewBucket(t), "root/prefix", storage.S3StoreOptions{})
		},
	}
}

func put(t *testing.T, s storage.Store, key, body string, opts storage.PutOptions) (storage.ObjectInfo, error) {
	t.Helper()
	return s.Put(context.Background(), key, strings.NewReader(body), opts)
}

func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Run("list in key order with prefix", func(t *testing.T) {
				s := open(t)
				keys := []string{"b/2.csv", "a-c.csv", "a/b.csv", "b/10.csv", "c.parquet"}
				for _, k := range keys {
					if _, err := put(t, s, k, "x-"+k, storage.PutOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				var got []string
				if err := s.List(ctx, "", func(o storage.ObjectInfo) error { got = append(got, o.Key); return nil }); err != nil {
					t.Fatal(err)
				}
				want := "a-c.csv a/b.csv b/10.csv b/2.csv c.parquet"
				if strings.Join(got, " ") != want {
					t.Fatalf("List = %v, want %s", got, want)
				}
				got = nil
				if err := s.List(ctx, "b/", func(o storage.ObjectInfo) error {
					got = append(got, o.Key)
					if o.Size != int64(len("x-"+o.Key)) {
						t.Errorf("%s size %d", o.Key, o.Size)
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				if strings.Join(got, " ") != "b/10.csv b/2.csv" {
					t.Fatalf("List(b/) = %v", got)
				}
			})
			t.Run("get stat delete", func(t *testing.T) {
				s := open(t)
				if _, err := put(t, s, "g/k.json", "hello", storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
				b, info, err := storage.ReadAll(ctx, s, "g/k.json")
				if err != nil || string(b) != "hello" || info.Size != 5 || info.ETag == "" {
					t.Fatalf("ReadAll = %q %+v %v", b, info, err)
				}
				if _, err := s.Stat(ctx, "g/missing"); !errors.Is(err, storage.ErrNotExist) {
					t.Fatalf("Stat missing: %v", err)
				}
				if _, _, err := s.Get(ctx, "g/missing"); !errors.Is(err, storage.ErrNotExist) {
					t.Fatalf("Get missing: %v", err)
				}
				if err := s.Copy(ctx, "g/k.json", "h/copy.json"); err != nil {
					t.Fatal(err)
				}
				if b, _, err := storage.ReadAll(ctx, s, "h/copy.json"); err != nil || string(b) != "hello" {
					t.Fatalf("copy = %q %v", b, err)
				}
				if err := s.Delete(ctx, "g/k.json"); err != nil {
					t.Fatal(err)
				}
				if err := s.Delete(ctx, "g/k.json"); err != nil {
					t.Fatalf("second delete: %v", err)
				}
				if _, err := s.Stat(ctx, "g/k.json"); !errors.Is(err, storage.ErrNotExist) {
					t.Fatalf("after delete: %v", err)
				}
			})
			t.Run("conditional create has exactly one winner", func(t *testing.T) {
				s := open(t)
				var wins, losses atomic.Int32
				var wg sync.WaitGroup
				for i := range 8 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := put(t, s, "meta/v2.metadata.json", fmt.Sprint(i), storage.PutOptions{IfAbsent: true})
						switch {
						case err == nil:
							wins.Add(1)
						case errors.Is(err, storage.ErrPreconditionFailed):
							losses.Add(1)
						default:
							t.Error(err)
						}
					}()
				}
				wg.Wait()
				if wins.Load() != 1 || losses.Load() != 7 {
					t.Fatalf("wins %d losses %d", wins.Load(), losses.Load())
				}
			})
			t.Run("compare and swap", func(t *testing.T) {
				s := open(t)
				first, err := put(t, s, "lease.json", "one", storage.PutOptions{IfAbsent: true})
				if err != nil {
					t.Fatal(err)
				}
				second, err := put(t, s, "lease.json", "two", storage.PutOptions{IfMatch: first.ETag})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := put(t, s, "lease.json", "three", storage.PutOptions{IfMatch: first.ETag}); !errors.Is(err, storage.ErrPreconditionFailed) {
					t.Fatalf("stale If-Match: %v", err)
				}
				if b, _, _ := storage.ReadAll(ctx, s, "lease.json"); string(b) != "two" {
					t.Fatalf("content %q", b)
				}
				if _, err := put(t, s, "lease.json", "four", storage.PutOptions{IfMatch: second.ETag}); err != nil {
					t.Fatal(err)
				}
			})
			t.Run("conditional delete", func(t *testing.T) {
				s := open(t)
				first, err := put(t, s, "c/lease.json", "one", storage.PutOptions{IfAbsent: true})
				if err != nil {
					t.Fatal(err)
				}
				second, err := put(t, s, "c/lease.json", "two!", storage.PutOptions{IfMatch: first.ETag})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.DeleteIfMatch(ctx, "c/lease.json", first.ETag); !errors.Is(err, storage.ErrPreconditionFailed) {
					t.Fatalf("delete with a stale ETag: %v, want ErrPreconditionFailed", err)
				}
				if b, _, err := storage.ReadAll(ctx, s, "c/lease.json"); err != nil || string(b) != "two!" {
					t.Fatalf("after the refused delete: %q %v", b, err)
				}
				if err := s.DeleteIfMatch(ctx, "c/lease.json", second.ETag); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Stat(ctx, "c/lease.json"); !errors.Is(err, storage.ErrNotExist) {
					t.Fatalf("after the delete: %v", err)
				}
				if err := s.DeleteIfMatch(ctx, "c/lease.json", second.ETag); err != nil {
					t.Fatalf("delete of a missing key: %v", err)
				}
				var keys []string
				if err := s.List(ctx, "", func(o storage.ObjectInfo) error { keys = append(keys, o.Key); return nil }); err != nil && !errors.Is(err, storage.ErrNotExist) {
					t.Fatal(err)
				}
				if len(keys) != 0 {
					t.Fatalf("left behind: %v", keys)
				}
			})
			t.Run("invalid keys are refused", func(t *testing.T) {
				s := open(t)
				for _, k := range []string{"", "/abs", "a/../b", "a//b", "a\x00b", "dir/"} {
					if _, err := put(t, s, k, "x", storage.PutOptions{}); err == nil {
						t.Errorf("Put(%q) accepted", k)
					}
				}
			})
		})
	}
}

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key string
		ok  bool
	}{
		{"gateway-7/20260105T1000.csv", true},
		{"a b/ü.csv", true},
		{strings.Repeat("k", 1024), true},
		{strings.Repeat("k", 1025), false},
		{"../x", false},
		{"a/./b", false},
		{"a\nb", false},
		{`a\b`, false},
	} {
		if err := storage.ValidateKey(tc.key); (err == nil) != tc.ok {
			t.Errorf("ValidateKey(%.20q) = %v", tc.key, err)
		}
	}
}

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		in           string
		bareIsBucket bool
		bucket       string
		prefix       string
		local        bool
		err          bool
	}{
		{"s3://my-lake/warehouse", false, "my-lake", "warehouse", false, false},
		{"s3://my-lake/a/b/", false, "my-lake", "a/b", false, false},
		{"s3a://my-lake", false, "my-lake", "", false, false},
		{"my-lake-landing", true, "my-lake-landing", "", false, false},
		{"my-lake-landing", false, "", "", true, false},
		{"./landing", true, "", "", true, false},
		{"/var/landing", true, "", "", true, false},
		{"file:///var/lake", false, "", "", true, false},
		{"s3://Bad_Bucket/x", false, "", "", false, true},
		{"gs://bucket/x", false, "", "", false, true},
		{"", true, "", "", false, true},
	} {
		loc, err := storage.ParseLocation(tc.in, tc.bareIsBucket)
		if tc.err {
			if err == nil {
				t.Errorf("ParseLocation(%q) = %+v, want error", tc.in, loc)
			}
			continue
		}
		if err != nil || loc.Bucket != tc.bucket || loc.Prefix != tc.prefix || (loc.Dir != "") != tc.local {
			t.Errorf("ParseLocation(%q, %v) = %+v, %v", tc.in, tc.bareIsBucket, loc, err)
		}
	}
}

// TestLocationSchemeTypo: a mistyped URL (a slash or the colon missing,
// the scheme in capitals) is refused with the URL meant, not taken for a
// folder named "s3:" or "s3" in the current directory.
func TestLocationSchemeTypo(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"s3:/landing", "did you mean s3://landing?"},
		{"s3:landing/in", "did you mean s3://landing/in?"},
		{"S3:/landing", "did you mean s3://landing?"},
		{"s3a:/lake", "did you mean s3a://lake?"},
		{"file:/var/lake", "did you mean file:///var/lake?"},
		{"s3//landing", "did you mean s3://landing?"},
		{"s3//lake/warehouse", "did you mean s3://lake/warehouse?"},
		{"S3://landing", "did you mean s3://landing?"},
		{"File:///srv/lake", "did you mean file:///srv/lake?"},
	} {
		for _, bare := range []bool{true, false} {
			_, err := storage.ParseLocation(tc.in, bare)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseLocation(%q, %v): %v, want %q", tc.in, bare, err, tc.want)
			}
		}
	}
	for _, folder := range []string{"./s3-mirror/x", "s3-mirror/x", "files/lake", "s3data"} {
		if loc, err := storage.ParseLocation(folder, false); err != nil || loc.Dir == "" {
			t.Errorf("a folder whose name starts like a scheme, %q: %+v, %v", folder, loc, err)
		}
	}
	if loc, err := storage.ParseLocation("s3://landing", true); err != nil || loc.Bucket != "landing" {
		t.Errorf("s3://landing: %+v, %v", loc, err)
	}
}

// TestBareWordAndSlash: LANDING_BUCKET=landing/ is the folder when it
// exists, else refused with the bucket meant (an upload wrote to a new
// folder ./landing).
func TestBareWordAndSlash(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := storage.ParseLocation("landing/", true)
	if err == nil || !strings.Contains(err.Error(), "did you mean the bucket s3://landing?") {
		t.Fatalf("landing/ without a folder: %v", err)
	}
	if loc, err := storage.ParseLocation("landing/", false); err != nil || loc.Dir == "" {
		t.Errorf("a warehouse landing/ is a folder: %+v, %v", loc, err)
	}
	if err := os.Mkdir("landing", 0o755); err != nil {
		t.Fatal(err)
	}
	if loc, err := storage.ParseLocation("landing/", true); err != nil || loc.Dir == "" {
		t.Errorf("landing/ with the folder: %+v, %v", loc, err)
	}
}

// TestBareWordThatIsAFolder: "land" where ./land exists is most likely the
// folder, not a bucket: the error asks.
func TestBareWordThatIsAFolder(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("land", 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := storage.ParseLocation("land", true)
	if err == nil || !strings.Contains(err.Error(), "did you mean ./land?") || !strings.Contains(err.Error(), "s3://land") {
		t.Fatalf("error %v, want did you mean ./land?", err)
	}
	for _, s := range []string{"./land", "s3://land"} {
		if _, err := storage.ParseLocation(s, true); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if loc, err := storage.ParseLocation("land", false); err != nil || loc.IsS3() {
		t.Errorf("a warehouse bare word is a folder: %+v, %v", loc, err)
	}
}

func TestIsTigrisEndpoint(t *testing.T) {
	for ep, want := range map[string]bool{
		"https://t3.storage.dev":         true,
		"https://fly.storage.tigris.dev": true,
		"https://s3.amazonaws.com":       false,
		"http://127.0.0.1:9000":          false,
		"https://notstorage.dev":         false,
	} {
		if got := storage.IsTigrisEndpoint(ep); got != want {
			t.Errorf("IsTigrisEndpoint(%s) = %v", ep, got)
		}
	}
}

// TestTigrisConsistentHeader checks which requests carry
// X-Tigris-Consistent: conditional writes always, reads only on a store
// opened with ConsistentReads (the lake's metadata store).
func TestTigrisConsistentHeader(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		op := r.Method
		if r.Header.Get("If-None-Match") != "" {
			op += "-conditional"
		}
		seen[op] = r.Header.Get(storage.TigrisConsistentHeader)
		mu.Unlock()
		switch r.Method {
		case http.MethodPut:
			w.Header().Set("ETag", `"e"`)
		case http.MethodGet:
			w.Header().Set("ETag", `"e"`)
			io.WriteString(w, "body")
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	client, err := storage.NewS3Client(ctx, storage.S3Config{Endpoint: srv.URL, Region: "auto",
		AccessKeyID: "tid_test", SecretAccessKey: "tsec_test", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name            string
		consistentReads bool
		want            map[string]string
	}{
		{"landing", false, map[string]string{"PUT": "", "PUT-conditional": "true", "GET": ""}},
		{"metadata", true, map[string]string{"PUT": "true", "PUT-conditional": "true", "GET": "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			clear(seen)
			mu.Unlock()
			s := storage.NewS3Store(client, "bucket", "", storage.S3StoreOptions{Tigris: true, ConsistentReads: tc.consistentReads})
			if _, err := s.Put(ctx, "k", bytes.NewReader([]byte("x")), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Put(ctx, "k2", bytes.NewReader([]byte("x")), storage.PutOptions{IfAbsent: true}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := storage.ReadAll(ctx, s, "k"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			for op, want := range tc.want {
				if seen[op] != want {
					t.Errorf("%s: header %q, want %q", op, seen[op], want)
				}
			}
		})
	}
}

// TestPathStyleForCustomEndpoints checks the addressing: path-style for a
// custom endpoint unless virtual-hosted is asked for.
func TestPathStyleForCustomEndpoints(t *testing.T) {
	var path, host string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path, host = r.URL.Path, r.Host
		w.Header().Set("ETag", `"e"`)
	}))
	defer srv.Close()
	ctx := context.Background()
	client, err := storage.NewS3Client(ctx, storage.S3Config{Endpoint: srv.URL, Region: "us-east-1",
		AccessKeyID: "a", SecretAccessKey: "b", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := storage.NewS3Store(client, "landing", "", storage.S3StoreOptions{})
	if _, err := s.Put(ctx, "gw/x.csv", strings.NewReader("x"), storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if path != "/landing/gw/x.csv" || strings.HasPrefix(host, "landing.") {
		t.Fatalf("request went to host %s path %s, want path-style /landing/gw/x.csv", host, path)
	}
	if _, err := storage.NewS3Client(ctx, storage.S3Config{Endpoint: "t3.storage.dev"}); err == nil {
		t.Fatal("endpoint without scheme accepted")
	}
}

// TestLocalDeleteKeepsGatewayFolders: Delete removes the folders it leaves
// empty, but a landing folder (KeepFolders(1)) keeps its first level, the
// gateways' folders that gateways write into.
func TestLocalDeleteKeepsGatewayFolders(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		depth int
		kept  []string
		gone  []string
	}{
		{depth: 0, gone: []string{"gw-1", "gw-1/2026"}},
		{depth: 1, kept: []string{"gw-1"}, gone: []string{"gw-1/2026"}},
	} {
		dir := t.TempDir()
		st, err := storage.NewLocalStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		st.KeepFolders(tc.depth)
		for _, key := range []string{"gw-1/a.csv", "gw-1/2026/b.csv"} {
			if _, err := st.Put(ctx, key, strings.NewReader("x"), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := st.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range tc.kept {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("depth %d: %s removed: %v", tc.depth, f, err)
			}
		}
		for _, f := range tc.gone {
			if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("depth %d: empty %s left (%v)", tc.depth, f, err)
			}
		}
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("depth %d: the root removed: %v", tc.depth, err)
		}
	}
}
