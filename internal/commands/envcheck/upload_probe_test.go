package envcheck

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/smithy-go"

	"github.com/timelake/timelake/internal/landing"
	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// recordingStore records what a check does to a store; with refuseDelete
// every delete is refused as S3 refuses a key without s3:DeleteObject.
type recordingStore struct {
	storage.Store
	refuseDelete bool

	mu      sync.Mutex
	written []string // keys put or deleted
	listed  int      // List calls
}

func (s *recordingStore) note(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = append(s.written, key)
}

func (s *recordingStore) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	s.mu.Lock()
	s.listed++
	s.mu.Unlock()
	return s.Store.List(ctx, prefix, fn)
}

func (s *recordingStore) Put(ctx context.Context, key string, body io.ReadSeeker, opts storage.PutOptions) (storage.ObjectInfo, error) {
	s.note(key)
	return s.Store.Put(ctx, key, body, opts)
}

func (s *recordingStore) Copy(ctx context.Context, src, dst string) error {
	s.note(dst)
	return s.Store.Copy(ctx, src, dst)
}

func (s *recordingStore) Delete(ctx context.Context, key string) error {
	s.note(key)
	if s.refuseDelete {
		return &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
	}
	return s.Store.Delete(ctx, key)
}

func (s *recordingStore) DeleteIfMatch(ctx context.Context, key, etag string) error {
	s.note(key)
	if s.refuseDelete {
		return &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
	}
	return s.Store.DeleteIfMatch(ctx, key, etag)
}

// listKeys lists every key of st.
func listKeys(t *testing.T, st storage.Store) []string {
	t.Helper()
	var keys []string
	if err := st.List(context.Background(), "", func(o storage.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// runUploadChecks runs the gateway binary's upload probes on st with the
// keys of gateway gw-1 below prefix site-3.
func runUploadChecks(t *testing.T, st storage.Store) []Check {
	t.Helper()
	c := newChecker(&CheckOptions{Timeout: 20 * time.Second})
	c.landingOK = true
	c.uploadFolder = "site-3/gw-1/"
	if c.uploadProbe(context.Background(), st) {
		c.uploadConditionalProbe(context.Background(), st)
	}
	return c.report().Checks
}

func rowOf(t *testing.T, rows []Check, name string) Check {
	t.Helper()
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %s in %+v", name, rows)
	return Check{}
}

// testStores are the stores the upload probes are tried on: a local
// folder, and a bucket of the test S3 server.
func testStores(t *testing.T) map[string]func(t *testing.T) storage.Store {
	return map[string]func(t *testing.T) storage.Store{
		"local folder": func(t *testing.T) storage.Store {
			st, err := storage.NewLocalStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
		"s3": func(t *testing.T) storage.Store {
			srv := s3test.FromEnv(t)
			return storage.NewS3Store(srv.Client(t), srv.NewBucket(t), "", storage.S3StoreOptions{})
		},
	}
}

// TestUploadProbesStayBelowTheGatewaysKeys: the gateway's checks write
// nothing but hidden names ingest never loads, below the gateway's keys,
// never list, and leave nothing behind when the key may delete.
func TestUploadProbesStayBelowTheGatewaysKeys(t *testing.T) {
	for name, open := range testStores(t) {
		t.Run(name, func(t *testing.T) {
			base := open(t)
			if _, err := base.Put(context.Background(), "gw-0/20260105T100000Z-1a2b3c4d.csv", strings.NewReader("time\n"), storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			st := &recordingStore{Store: base}
			rows := runUploadChecks(t, st)
			if r := rowOf(t, rows, CheckUploadPut); r.Result != OK || !strings.Contains(r.Detail, "put/HEAD/delete of site-3/gw-1/"+UploadProbeName+" ok") {
				t.Errorf("upload-put: %+v", r)
			}
			if r := rowOf(t, rows, CheckUploadConditional); r.Result != OK || !strings.Contains(r.Detail, "412") {
				t.Errorf("upload-conditional: %+v", r)
			}
			if st.listed != 0 {
				t.Errorf("the check listed the store %d times", st.listed)
			}
			bucket := landing.Bucket{Store: base}
			for _, key := range st.written {
				if !strings.HasPrefix(key, "site-3/gw-1/") || !bucket.Skipped(key) {
					t.Errorf("the check wrote %s: not a name ingest skips below site-3/gw-1/", key)
				}
			}
			if keys := listKeys(t, base); len(keys) != 1 || keys[0] != "gw-0/20260105T100000Z-1a2b3c4d.csv" {
				t.Errorf("after the check the store holds %q, want only the file put before", keys)
			}
		})
	}
}

// TestUploadProbesWithoutDelete: a key that may not delete (a write-only
// gateway key) passes; the probes stay, at most one of each per gateway,
// and the next check passes with them there.
func TestUploadProbesWithoutDelete(t *testing.T) {
	for name, open := range testStores(t) {
		t.Run(name, func(t *testing.T) {
			base := open(t)
			st := &recordingStore{Store: base, refuseDelete: true}
			for run := 1; run <= 2; run++ {
				rows := runUploadChecks(t, st)
				if r := rowOf(t, rows, CheckUploadPut); r.Result != OK || !strings.Contains(r.Detail, "delete refused") || !strings.Contains(r.Detail, "probe stays") {
					t.Errorf("run %d: upload-put: %+v", run, r)
				}
				if r := rowOf(t, rows, CheckUploadConditional); r.Result != OK || !strings.Contains(r.Detail, "412") {
					t.Errorf("run %d: upload-conditional: %+v", run, r)
				}
				want := []string{"site-3/gw-1/" + UploadConditionalProbeName, "site-3/gw-1/" + UploadProbeName}
				if keys := listKeys(t, base); strings.Join(keys, " ") != strings.Join(want, " ") {
					t.Errorf("run %d: the store holds %q, want %q", run, keys, want)
				}
			}
			if st.listed != 0 {
				t.Errorf("the check listed the store %d times", st.listed)
			}
		})
	}
}
