package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/timelake/timelake/internal/testutil/s3test"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// randomBytes returns n deterministic pseudo-random bytes.
func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func readAll(t *testing.T, s Store, key string) []byte {
	t.Helper()
	b, _, err := ReadAll(t.Context(), s, key)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

// uploadContract runs the behaviour every store must share.
func uploadContract(t *testing.T, s Store, bigOpts UploadOptions, big int) {
	ctx := t.Context()
	first := []byte("time,value\n2026-01-05T10:00:00Z,1\n")
	other := []byte("time,value\n2026-01-05T10:00:00Z,2\n")

	tests := []struct {
		name    string
		key     string
		body    []byte
		sha     string
		opts    UploadOptions
		wantErr error
		want    []byte // content of key afterwards; nil: must not exist
	}{
		{name: "create", key: "gw/a.csv", body: first, sha: sha(first), want: first},
		{name: "existing key refused", key: "gw/a.csv", body: other, sha: sha(other), wantErr: ErrPreconditionFailed, want: first},
		{name: "wrong checksum refused", key: "gw/b.csv", body: other, sha: sha(first), wantErr: ErrChecksumMismatch},
		{name: "big create", key: "gw/big.bin", body: randomBytes(1, big), opts: bigOpts},
		{name: "big existing refused", key: "gw/big.bin", body: randomBytes(2, big), opts: bigOpts, wantErr: ErrPreconditionFailed},
		{name: "big wrong checksum refused", key: "gw/big2.bin", body: randomBytes(3, big), sha: sha(first), opts: bigOpts, wantErr: ErrChecksumMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sha == "" {
				tt.sha = sha(tt.body)
			}
			opts := tt.opts
			opts.IfAbsent, opts.SHA256 = true, tt.sha
			var last atomic.Int64
			opts.Progress = func(n int64) { last.Store(n) }
			res, err := Upload(ctx, s, tt.key, bytes.NewReader(tt.body), int64(len(tt.body)), opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Upload: err = %v, want %v", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatalf("Upload: %v", err)
				}
				if res.Size != int64(len(tt.body)) {
					t.Errorf("size = %d, want %d", res.Size, len(tt.body))
				}
				if last.Load() != int64(len(tt.body)) {
					t.Errorf("progress ended at %d, want %d", last.Load(), len(tt.body))
				}
				tt.want = tt.body
			}
			if tt.want == nil && tt.wantErr != ErrPreconditionFailed {
				if _, err := s.Stat(ctx, tt.key); !errors.Is(err, ErrNotExist) {
					t.Fatalf("%s exists after a refused upload (stat err %v)", tt.key, err)
				}
				return
			}
			if tt.want != nil && !bytes.Equal(readAll(t, s, tt.key), tt.want) {
				t.Fatalf("%s: content differs from what was expected", tt.key)
			}
		})
	}
}

func TestUploadLocal(t *testing.T) {
	dir := t.TempDir()
	s, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	uploadContract(t, s, UploadOptions{}, 3<<20)
	// No temporary files are left behind by the refused uploads.
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tempPrefix) {
			t.Errorf("left-over temporary file %s", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_, meta, err := StatMetadata(t.Context(), s, "gw/a.csv")
	if err != nil || meta != nil {
		t.Fatalf("StatMetadata on a folder = %v, %v; want nil map, nil", meta, err)
	}
}

func TestUploadS3(t *testing.T) {
	srv := s3test.FromEnv(t)
	// The SDK's client, and the client the program uses (NewS3Client):
	// each must do what Upload asks of it, multipart uploads included.
	own, err := NewS3Client(t.Context(), S3Config{Endpoint: srv.Endpoint, Region: srv.Region, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	for name, client := range map[string]interface {
		S3API
		multipartLister
	}{"sdk": srv.Client(t), "NewS3Client": own} {
		t.Run(name, func(t *testing.T) { uploadS3(t, srv, client) })
	}
}

func uploadS3(t *testing.T, srv s3test.Server, client interface {
	S3API
	multipartLister
}) {
	bucket := srv.NewBucket(t)
	s := NewS3Store(client, bucket, "landing", S3StoreOptions{})
	big := 12 << 20
	// 6 MiB threshold, 5 MiB parts (the S3 minimum): 3 parts.
	bigOpts := UploadOptions{MultipartThreshold: 6 << 20, PartSize: 5 << 20, Concurrency: 2}
	uploadContract(t, s, bigOpts, big)

	ctx := t.Context()
	info, meta, err := StatMetadata(ctx, s, "gw/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if want := sha(randomBytes(1, big)); meta[MetaSHA256] != want {
		t.Errorf("metadata %s = %q, want %q (all: %v)", MetaSHA256, meta[MetaSHA256], want, meta)
	}
	if info.Size != int64(big) {
		t.Errorf("size = %d, want %d", info.Size, big)
	}
	if !strings.HasSuffix(strings.Trim(info.ETag, `"`), "-3") {
		t.Errorf("ETag %s is not that of a 3-part multipart upload", info.ETag)
	}
	// Aborted uploads leave no parts behind.
	ups, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Errorf("%d multipart uploads left open", len(ups.Uploads))
	}

	res, err := Upload(ctx, s, "gw/meta.csv", strings.NewReader("a"), 1,
		UploadOptions{SHA256: sha([]byte("a")), Metadata: map[string]string{"source-sha256": "abc"}, ContentType: "text/csv"})
	if err != nil || res.Multipart || res.Parts != 1 {
		t.Fatalf("Upload = %+v, %v", res, err)
	}
	_, meta, err = StatMetadata(ctx, s, "gw/meta.csv")
	if err != nil || meta["source-sha256"] != "abc" || meta[MetaSHA256] != sha([]byte("a")) {
		t.Fatalf("metadata = %v, %v", meta, err)
	}
}

// TestServerChecksSHA256 proves that the server refuses a body whose
// x-amz-checksum-sha256 does not match, on PutObject (single Upload) and on
// UploadPart (multipart Upload): the guarantee against corruption in transit.
func TestServerChecksSHA256(t *testing.T) {
	srv := s3test.FromEnv(t)
	client := srv.Client(t)
	bucket := srv.NewBucket(t)
	ctx := t.Context()
	wrong := sha256.Sum256([]byte("something else"))
	wrongB64 := aws.String(base64.StdEncoding.EncodeToString(wrong[:]))
	tests := []struct {
		name string
		call func() error
	}{
		{name: "PutObject", call: func() error {
			_, err := client.PutObject(ctx, &s3.PutObjectInput{
				Bucket: aws.String(bucket), Key: aws.String("x.csv"),
				Body: strings.NewReader("time,value\n"), ChecksumSHA256: wrongB64,
			})
			return err
		}},
		{name: "UploadPart", call: func() error {
			mpu, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
				Bucket: aws.String(bucket), Key: aws.String("y.csv"), ChecksumAlgorithm: "SHA256",
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = client.UploadPart(ctx, &s3.UploadPartInput{
				Bucket: aws.String(bucket), Key: aws.String("y.csv"), UploadId: mpu.UploadId,
				PartNumber: aws.Int32(1), Body: strings.NewReader("time,value\n"), ChecksumSHA256: wrongB64,
			})
			_, _ = client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(bucket), Key: aws.String("y.csv"), UploadId: mpu.UploadId,
			})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if err == nil {
				t.Fatalf("%s with a wrong x-amz-checksum-sha256 succeeded", tt.name)
			}
			if !errors.Is(classifyUpload("put", "x.csv", err), ErrChecksumMismatch) {
				var ae smithy.APIError
				errors.As(err, &ae)
				t.Fatalf("error %v (code %v) is not classified as ErrChecksumMismatch", err, ae)
			}
		})
	}
}

// TestUploadRetries pins the retry policy of clients from NewS3Client:
// 5xx answers are retried with backoff, 4xx answers (403, 412) are not.
func TestUploadRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int // answers to successive requests; then 200
		wantReqs int32
		wantErr  error
	}{
		{name: "500 then ok", statuses: []int{500}, wantReqs: 2},
		{name: "503 twice then ok", statuses: []int{503, 503}, wantReqs: 3},
		{name: "403 not retried", statuses: []int{403}, wantReqs: 1, wantErr: errors.New("any")},
		{name: "412 not retried", statuses: []int{412}, wantReqs: 1, wantErr: ErrPreconditionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var n atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				i := int(n.Add(1)) - 1
				if i < len(tt.statuses) {
					code := map[int]string{500: "InternalError", 503: "ServiceUnavailable", 403: "AccessDenied", 412: "PreconditionFailed"}[tt.statuses[i]]
					w.WriteHeader(tt.statuses[i])
					_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+`</Code><Message>test</Message></Error>`)
					return
				}
				w.Header().Set("ETag", `"abc"`)
			}))
			defer ts.Close()
			s := fakeServerStore(t, ts.URL)
			body := []byte("time,value\n")
			_, err := Upload(context.Background(), s, "a.csv", bytes.NewReader(body), int64(len(body)), UploadOptions{IfAbsent: true, SHA256: sha(body)})
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Upload: %v", err)
			case tt.wantErr != nil && err == nil:
				t.Fatal("Upload succeeded")
			case tt.wantErr == ErrPreconditionFailed && !errors.Is(err, ErrPreconditionFailed):
				t.Fatalf("err = %v, want ErrPreconditionFailed", err)
			}
			if got := n.Load(); got != tt.wantReqs {
				t.Errorf("%d requests, want %d", got, tt.wantReqs)
			}
		})
	}
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

// TestPutSignsWithKnownSHA256 pins that a single PutObject over plain HTTP
// is signed with the SHA-256 Upload was given (x-amz-content-sha256), so
// that the body is read once, as it is sent, not once more beforehand by
// the SDK to hash it; a retry reads it again.
func TestPutSignsWithKnownSHA256(t *testing.T) {
	tests := []struct {
		name      string
		body      []byte
		statuses  []int // answers before a 200
		wantReads int   // passes over the body
	}{
		{name: "empty", body: nil, wantReads: 1},
		{name: "small", body: []byte("time,value\n2026-01-05T10:00:00Z,1\n"), wantReads: 1},
		{name: "1 MiB", body: randomBytes(4, 1<<20), wantReads: 1},
		{name: "retried", body: []byte("time,value\n"), statuses: []int{503}, wantReads: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				n      atomic.Int32
				hdr    atomic.Value
				gotLen atomic.Int64
			)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				hdr.Store(r.Header.Get("X-Amz-Content-Sha256"))
				gotLen.Store(int64(len(b)))
				if i := int(n.Add(1)) - 1; i < len(tt.statuses) {
					w.WriteHeader(tt.statuses[i])
					_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>test</Message></Error>`)
					return
				}
				w.Header().Set("ETag", `"abc"`)
			}))
			defer ts.Close()
			s := fakeServerStore(t, ts.URL)
			body := &countingReaderAt{r: bytes.NewReader(tt.body)}
			if _, err := Upload(t.Context(), s, "a.csv", body, int64(len(tt.body)), UploadOptions{IfAbsent: true, SHA256: sha(tt.body)}); err != nil {
				t.Fatalf("Upload: %v", err)
			}
			if got := hdr.Load(); got != sha(tt.body) {
				t.Errorf("x-amz-content-sha256 = %v, want %s", got, sha(tt.body))
			}
			if gotLen.Load() != int64(len(tt.body)) {
				t.Errorf("server got %d bytes, want %d", gotLen.Load(), len(tt.body))
			}
			if got, want := body.n.Load(), int64(tt.wantReads*len(tt.body)); got != want {
				t.Errorf("read %d bytes of the body, want %d (%d passes)", got, want, tt.wantReads)
			}
		})
	}
}

// fakeServerStore is an S3Store of bucket "bucket" on the test HTTP server
// at endpoint.
func fakeServerStore(t *testing.T, endpoint string) *S3Store {
	t.Helper()
	client, err := NewS3Client(t.Context(), S3Config{Endpoint: endpoint, Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	return NewS3Store(client, "bucket", "", S3StoreOptions{})
}
