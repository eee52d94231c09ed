package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/timelake/timelake/internal/storage"
	"github.com/timelake/timelake/internal/testutil/s3fault"
	"github.com/timelake/timelake/internal/testutil/s3test"
)

// listKeys returns every key of s.
func listKeys(t *testing.T, s storage.Store) []string {
	t.Helper()
	var keys []string
	if err := s.List(t.Context(), "", func(o storage.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestDeleteKeys: the keys asked are deleted, the others stay, missing
// keys are no error and count as gone.
func TestDeleteKeys(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			ctx := t.Context()
			for i := range 6 {
				if _, err := put(t, s, fmt.Sprintf("data/d%d/f%d.parquet", i%2, i), "x", storage.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			keys := []string{"data/d0/f0.parquet", "data/d1/f1.parquet", "data/missing.parquet", "data/d0/f2.parquet", "data/d1/f3.parquet", "data/d0/f0.parquet"}
			done, err := storage.DeleteKeys(ctx, s, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, d := range done {
				if !d {
					t.Errorf("%s not reported deleted", keys[i])
				}
			}
			if got, want := strings.Join(listKeys(t, s), " "), "data/d0/f4.parquet data/d1/f5.parquet"; got != want {
				t.Errorf("left %s, want %s", got, want)
			}
			if done, err := storage.DeleteKeys(ctx, s, nil); err != nil || len(done) != 0 {
				t.Errorf("no keys: %v, %v", done, err)
			}
		})
	}
}

// TestDeleteKeysLocalError: a key a folder store cannot remove (a folder
// that holds files) is reported with its key; the others are deleted.
func TestDeleteKeysLocalError(t *testing.T) {
	s, err := storage.NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b/c", "d"} {
		if _, err := put(t, s, k, "x", storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	done, err := storage.DeleteKeys(t.Context(), s, []string{"a", "b", "d"})
	if err == nil || !strings.Contains(err.Error(), "delete b") {
		t.Fatalf("err = %v, want the error of b", err)
	}
	if !done[0] || done[1] || !done[2] {
		t.Errorf("done = %v, want [true false true]", done)
	}
	if got := strings.Join(listKeys(t, s), " "); got != "b/c" {
		t.Errorf("left %s, want b/c", got)
	}
}

// TestDeleteKeysCancelled: nothing is tried once ctx is done, and every
// key stays not deleted.
func TestDeleteKeysCancelled(t *testing.T) {
	for name, mk := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			if _, err := put(t, s, "a", "x", storage.PutOptions{}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			done, err := storage.DeleteKeys(ctx, s, []string{"a", "b"})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if done[0] || done[1] {
				t.Errorf("done = %v, want none", done)
			}
			if got := strings.Join(listKeys(t, s), " "); got != "a" {
				t.Errorf("left %q, want a", got)
			}
		})
	}
}

// proxiedStore is an S3 store of a new bucket on the test server reached
// through a fault proxy that counts the requests.
func proxiedStore(t *testing.T) (*storage.S3Store, *s3fault.Proxy) {
	t.Helper()
	srv := s3test.FromEnv(t)
	p := s3fault.StartT(t, srv.Endpoint, 1)
	client := s3.New(s3.Options{
		Region: srv.Region, BaseEndpoint: aws.String(p.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		// The settings of NewS3Client: DeleteObjects carries its checksum
		// all the same, since the operation requires one.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	return storage.NewS3Store(client, srv.NewBucket(t), "wh", storage.S3StoreOptions{}), p
}

// TestDeleteKeysS3Batches: 2,500 keys (a few of them existing) go in 3
// DeleteObjects requests, which the test server accepts with the SDK's
// checksum; a key with a control character goes as a single delete.
func TestDeleteKeysS3Batches(t *testing.T) {
	s, p := proxiedStore(t)
	ctx := t.Context()
	var keys []string
	for i := range 2500 {
		keys = append(keys, fmt.Sprintf("data/f%04d.parquet", i))
	}
	for _, i := range []int{0, 999, 1000, 2499} {
		if _, err := put(t, s, keys[i], "x", storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := put(t, s, "data/keep.parquet", "x", storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := put(t, s, "data/tab\tname.parquet", "x", storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, "data/tab\tname.parquet")
	posts, deletes := p.Requests(http.MethodPost), p.Requests(http.MethodDelete)
	done, err := storage.DeleteKeys(ctx, s, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range done {
		if !d {
			t.Fatalf("%s not reported deleted", keys[i])
		}
	}
	if n := p.Requests(http.MethodPost) - posts; n != 3 {
		t.Errorf("%d DeleteObjects requests, want 3", n)
	}
	if n := p.Requests(http.MethodDelete) - deletes; n != 1 {
		t.Errorf("%d DeleteObject requests, want 1 (the key with a tab)", n)
	}
	if got := strings.Join(listKeys(t, s), " "); got != "data/keep.parquet" {
		t.Errorf("left %q, want data/keep.parquet", got)
	}
}

// TestDeleteKeysS3Refused: a server that answers DeleteObjects with 501
// NotImplemented gets single deletes with the same result, and the store
// asks no more DeleteObjects.
func TestDeleteKeysS3Refused(t *testing.T) {
	s, p := proxiedStore(t)
	ctx := t.Context()
	keys := putKeep(t, s)
	refuse := p.Add(s3fault.Rule{Name: "no DeleteObjects", Method: http.MethodPost, Query: "delete", Action: s3fault.Fail, Status: 501, Code: "NotImplemented"})
	deleteAllButKeep(t, s, keys)
	if _, err := storage.DeleteKeys(ctx, s, []string{"data/keep"}); err != nil {
		t.Fatal(err)
	}
	if c := p.Counts(refuse.Name); c.Matched != 1 {
		t.Errorf("%d DeleteObjects requests, want 1 (the refusal is remembered)", c.Matched)
	}
	if keys := listKeys(t, s); len(keys) != 0 {
		t.Errorf("left %v", keys)
	}
}

// TestDeleteKeysS3LostAnswer: DeleteObjects requests whose answers are
// lost (every one, past the SDK's retries) leave their keys to single
// deletes: every key is deleted and no error is returned.
func TestDeleteKeysS3LostAnswer(t *testing.T) {
	s, p := proxiedStore(t)
	keys := putKeep(t, s)
	lose := p.Add(s3fault.Rule{Name: "lost DeleteObjects answers", Method: http.MethodPost, Query: "delete", Action: s3fault.LoseResponse})
	deleteAllButKeep(t, s, keys)
	if c := p.Counts(lose.Name); c.Matched == 0 {
		t.Error("no DeleteObjects answer was lost")
	}
}

// TestDeleteKeysPerKeyErrors: the keys a DeleteObjects answer lists as
// errors are reported (classified, with their keys) and not counted as
// deleted; NoSuchKey counts as deleted. The request carries a checksum.
func TestDeleteKeysPerKeyErrors(t *testing.T) {
	var (
		mu      sync.Mutex
		sumSent bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !r.URL.Query().Has("delete") {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		sumSent = r.Header.Get("Content-MD5") != "" || r.Header.Get("X-Amz-Checksum-Crc32") != "" ||
			r.Header.Get("X-Amz-Checksum-Crc32c") != "" || r.Header.Get("X-Amz-Checksum-Sha256") != ""
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
<Error><Key>p/b</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error>
<Error><Key>p/c</Key><Code>NoSuchKey</Code><Message>gone</Message></Error>
</DeleteResult>`)
	}))
	defer srv.Close()
	client, err := storage.NewS3Client(t.Context(), storage.S3Config{Endpoint: srv.URL, Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s", MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := storage.NewS3Store(client, "bucket", "p", storage.S3StoreOptions{})
	done, err := storage.DeleteKeys(t.Context(), s, []string{"a", "b", "c"})
	if err == nil || !strings.Contains(err.Error(), "delete b") || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("err = %v, want AccessDenied for b", err)
	}
	if !done[0] || done[1] || !done[2] {
		t.Errorf("done = %v, want [true false true]", done)
	}
	mu.Lock()
	defer mu.Unlock()
	if !sumSent {
		t.Error("DeleteObjects sent without Content-MD5 or a checksum header")
	}
}

// putKeep puts data/a, data/b, data/c (returned) and data/keep.
func putKeep(t *testing.T, s storage.Store) []string {
	t.Helper()
	keys := []string{"data/a", "data/b", "data/c"}
	for _, k := range append(keys, "data/keep") {
		if _, err := put(t, s, k, "x", storage.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// deleteAllButKeep deletes keys and a missing one: every one reported
// deleted, data/keep left.
func deleteAllButKeep(t *testing.T, s storage.Store, keys []string) {
	t.Helper()
	done, err := storage.DeleteKeys(t.Context(), s, append(keys, "data/missing"))
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range done {
		if !d {
			t.Errorf("key %d not reported deleted", i)
		}
	}
	if got := strings.Join(listKeys(t, s), " "); got != "data/keep" {
		t.Errorf("left %q, want data/keep", got)
	}
}
