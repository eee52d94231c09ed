package storage

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	tm "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	tmtypes "github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Upload tuning defaults. The part size and threshold are those of the SDK's
// transfer manager; the concurrency is lower than its 5 so that a small
// gateway holds at most Threshold + (Concurrency+1) x PartSize bytes of
// parts in memory (56 MiB with the defaults).
const (
	// DefaultMultipartThreshold is the body size (bytes) from which Upload
	// uses a multipart upload on S3.
	DefaultMultipartThreshold int64 = 16 << 20
	// DefaultPartSize is the multipart part size in bytes (S3 allows 5 MiB to
	// 5 GiB per part and at most 10,000 parts; larger bodies get larger parts).
	DefaultPartSize int64 = 8 << 20
	// DefaultUploadConcurrency is the number of parts sent at the same time.
	DefaultUploadConcurrency = 4
)

// MetaSHA256 is the user-metadata name (S3 header x-amz-meta-sha256) under
// which Upload stores the hex SHA-256 of the object's bytes.
const MetaSHA256 = "sha256"

// ErrChecksumMismatch is returned (wrapped) when the bytes sent do not hash
// to UploadOptions.SHA256: the source changed while it was uploaded, or the
// server received a corrupted body (S3 400 BadDigest /
// XAmzContentChecksumMismatch). Nothing is published in that case.
var ErrChecksumMismatch = errors.New("checksum mismatch")

// UploadOptions are the conditions and tuning of an Upload.
type UploadOptions struct {
	// IfAbsent makes the upload a conditional create: If-None-Match: * on
	// PutObject or on CompleteMultipartUpload (S3 conditional writes), an
	// exclusive hard link on a folder. An existing key fails with
	// ErrPreconditionFailed and is left unchanged.
	IfAbsent bool
	// SHA256 is the hex SHA-256 of the body; required. It is sent as the
	// x-amz-checksum-sha256 of a single PutObject (the server rejects a body
	// that does not match), checked against the bytes actually read before a
	// multipart upload is completed or a file is published, and stored as
	// metadata MetaSHA256.
	SHA256 string
	// Metadata is extra user metadata (x-amz-meta-<name>, ASCII values);
	// folders ignore it.
	Metadata map[string]string
	// ContentType is the MIME type stored with the object (S3 only).
	ContentType string
	// MultipartThreshold: bodies of at least this many bytes go up as a
	// multipart upload on S3; 0 means DefaultMultipartThreshold.
	MultipartThreshold int64
	// PartSize is the multipart part size in bytes; 0 means DefaultPartSize.
	PartSize int64
	// Concurrency is the number of parts in flight; 0 means
	// DefaultUploadConcurrency.
	Concurrency int
	// Progress, if set, is called with the number of body bytes sent so far
	// (it may go back to 0 when a single PUT is retried). It may be called
	// from several goroutines, never concurrently.
	Progress func(sent int64)
}

// UploadResult describes a finished Upload.
type UploadResult struct {
	ObjectInfo
	// Multipart is true when the body went up as a multipart upload.
	Multipart bool
	// Parts is the number of parts of a multipart upload (1 otherwise).
	Parts int
}

// Upload writes the size bytes of r under key with the integrity checks and
// conditions of opts: one PutObject, or through the SDK transfer manager a
// multipart upload for large bodies on an *S3Store; an atomic publish on a
// *LocalStore (and on any other Store, through Put). Transient S3 errors
// (5xx, throttling, connection errors) are retried with backoff by the
// client's retryer (NewS3Client); 4xx answers are not.
//
// A lost conditional create is ErrPreconditionFailed; a body that does not
// match opts.SHA256 is ErrChecksumMismatch. In both cases nothing is written.
func Upload(ctx context.Context, s Store, key string, r io.ReaderAt, size int64, opts UploadOptions) (UploadResult, error) {
	if err := ValidateKey(key); err != nil {
		return UploadResult{}, err
	}
	if _, err := hex.DecodeString(opts.SHA256); err != nil || len(opts.SHA256) != sha256.Size*2 {
		return UploadResult{}, fmt.Errorf("upload %s: invalid SHA-256 %q", key, opts.SHA256)
	}
	if s3s, ok := s.(*S3Store); ok {
		return s3s.upload(ctx, key, r, size, opts)
	}
	// Folders and other stores: Put reads the body to its end before it
	// publishes anything, so a mismatch at EOF leaves no object behind.
	body := &verifyReader{r: io.NewSectionReader(r, 0, size), size: size, want: opts.SHA256, key: key, progress: opts.Progress}
	info, err := s.Put(ctx, key, body, PutOptions{IfAbsent: opts.IfAbsent, ContentType: opts.ContentType})
	if err != nil {
		return UploadResult{}, err
	}
	return UploadResult{ObjectInfo: info, Parts: 1}, nil
}

// StatMetadata is Stat plus the object's user metadata (lower-case names
// without the x-amz-meta- prefix). Stores without metadata (folders) return
// a nil map.
func StatMetadata(ctx context.Context, s Store, key string) (ObjectInfo, map[string]string, error) {
	s3s, ok := s.(*S3Store)
	if !ok {
		info, err := s.Stat(ctx, key)
		return info, nil, err
	}
	opts := s3s.readOpts()
	if s3s.consistentWrites && !s3s.consistentAll {
		// This read follows a conditional write that lost: ask Tigris for
		// the globally newest version.
		opts = append(opts, withHeader(TigrisConsistentHeader, "true"))
	}
	out, err := s3s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s3s.bucket),
		Key:    aws.String(s3s.prefix + key),
	}, opts...)
	if err != nil {
		return ObjectInfo{}, nil, classify("stat", key, err)
	}
	info := ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}
	if out.LastModified != nil {
		info.LastModified = out.LastModified.UTC()
	}
	return info, out.Metadata, nil
}

// IsAccessDenied reports whether err is an S3 403 AccessDenied. Without
// s3:ListBucket, AWS answers 403 instead of 404 for a missing key.
func IsAccessDenied(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "Forbidden") {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == 403
}

func (s *S3Store) upload(ctx context.Context, key string, r io.ReaderAt, size int64, opts UploadOptions) (UploadResult, error) {
	threshold := opts.MultipartThreshold
	if threshold <= 0 {
		threshold = DefaultMultipartThreshold
	}
	meta := make(map[string]string, len(opts.Metadata)+1)
	for k, v := range opts.Metadata {
		meta[k] = v
	}
	meta[MetaSHA256] = opts.SHA256
	var extra []func(*s3.Options)
	if (opts.IfAbsent && s.consistentWrites) || s.consistentAll {
		extra = append(extra, withHeader(TigrisConsistentHeader, "true"))
	}
	if size >= threshold {
		return s.multipartUpload(ctx, key, r, size, meta, opts, extra)
	}

	sum, _ := hex.DecodeString(opts.SHA256)
	// The server checks the body against ChecksumSHA256; vr also checks it
	// on our side, so a file that changes while it is read fails the
	// request instead of sending bytes that hash differently.
	vr := &verifyReader{r: io.NewSectionReader(r, 0, size), size: size, want: opts.SHA256, key: key, progress: opts.Progress}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.prefix + key),
		Body:          vr,
		ContentLength: aws.Int64(size),
		Metadata:      meta,
		// A precomputed checksum goes as a header (never as an aws-chunked
		// trailer, which some S3-compatible servers reject) and makes the
		// server refuse a body that does not hash to it.
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum)),
	}
	if opts.ContentType != "" {
		in.ContentType = aws.String(opts.ContentType)
	}
	if opts.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := s.client.PutObject(ctx, in, append(extra, withPayloadHash(opts.SHA256))...)
	if err != nil {
		if vr.err != nil {
			return UploadResult{}, vr.err
		}
		return UploadResult{}, classifyUpload("put", key, err)
	}
	return UploadResult{ObjectInfo: ObjectInfo{Key: key, Size: size, ETag: aws.ToString(out.ETag)}, Parts: 1}, nil
}

// multipartUpload sends the body through the SDK transfer manager. Each part
// carries its own x-amz-checksum-sha256 (computed by mpuClient, sent as a
// header), the whole body is hashed on the way and compared with
// opts.SHA256 before CompleteMultipartUpload, which carries If-None-Match.
func (s *S3Store) multipartUpload(ctx context.Context, key string, r io.ReaderAt, size int64, meta map[string]string, opts UploadOptions, extra []func(*s3.Options)) (UploadResult, error) {
	api, ok := s.client.(tm.S3APIClient)
	if !ok {
		return UploadResult{}, fmt.Errorf("upload %s: the S3 client does not support multipart uploads", key)
	}
	partSize := opts.PartSize
	if partSize <= 0 {
		partSize = DefaultPartSize
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = DefaultUploadConcurrency
	}
	threshold := opts.MultipartThreshold
	if threshold <= 0 {
		threshold = DefaultMultipartThreshold
	}
	client := &mpuClient{S3APIClient: api, extra: extra, sums: map[int32]string{}}
	tmc := tm.New(client, func(o *tm.Options) {
		o.PartSizeBytes = partSize
		o.MultipartUploadThreshold = threshold
		o.Concurrency = conc
		o.ChecksumAlgorithm = tmtypes.ChecksumAlgorithmSha256
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		if opts.Progress != nil {
			o.ObjectProgressListeners.Register(progressListener{mu: &sync.Mutex{}, fn: opts.Progress})
		}
	})
	vr := &verifyReader{r: io.NewSectionReader(r, 0, size), size: size, want: opts.SHA256, key: key}
	in := &tm.UploadObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
		// Hidden behind a plain io.Reader on purpose: the transfer manager
		// then reads the body once, in order, so vr sees every byte.
		Body:          struct{ io.Reader }{vr},
		ContentLength: aws.Int64(size),
		Metadata:      meta,
	}
	if opts.ContentType != "" {
		in.ContentType = aws.String(opts.ContentType)
	}
	if opts.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := tmc.UploadObject(ctx, in)
	if err != nil {
		if vr.err != nil {
			// Aborted before CompleteMultipartUpload: nothing published.
			return UploadResult{}, vr.err
		}
		return UploadResult{}, classifyUpload("upload", key, err)
	}
	if client.completeErr != nil {
		return UploadResult{}, classifyUpload("upload", key, client.completeErr)
	}
	return UploadResult{
		ObjectInfo: ObjectInfo{Key: key, Size: size, ETag: aws.ToString(out.ETag)},
		Multipart:  true,
		Parts:      client.parts(),
	}, nil
}

// withPayloadHash gives the SigV4 signer of a PutObject over plain HTTP the
// body's SHA-256 (hex), which Upload already knows: without it the SDK reads
// and hashes the whole body once more before sending it. The server still
// checks the body against it (and against x-amz-checksum-sha256), and
// verifyReader still hashes the bytes actually sent. Over HTTPS nothing
// changes: the payload stays UNSIGNED-PAYLOAD, which the SDK does not hash.
func withPayloadHash(hexSHA256 string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("timelakePayloadHash",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					if req, ok := in.Request.(*smithyhttp.Request); ok && !req.IsHTTPS() {
						ctx = v4.SetPayloadHash(ctx, hexSHA256)
					}
					return next.HandleFinalize(ctx, in)
				}), middleware.Before)
		})
	}
}

// classifyUpload is classify plus the checksum answers of S3-compatible
// servers (BadDigest: AWS, Tigris, MinIO; XAmzContentChecksumMismatch and
// XAmzContentSHA256Mismatch: newer AWS and versitygw).
func classifyUpload(op, key string, err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "BadDigest", "XAmzContentChecksumMismatch", "XAmzContentSHA256Mismatch", "InvalidDigest":
			return fmt.Errorf("%s %s: %w (%s)", op, key, ErrChecksumMismatch, ae.ErrorCode())
		}
	}
	return classify(op, key, err)
}

// mpuClient adapts the S3 client for the transfer manager: it precomputes
// each part's SHA-256 so that it travels as a header (the SDK would
// otherwise send it as an aws-chunked trailer over HTTPS, which several
// S3-compatible servers reject), makes sure CompleteMultipartUpload lists
// every part checksum, and adds the Tigris consistency header to the
// conditional CompleteMultipartUpload.
type mpuClient struct {
	tm.S3APIClient
	extra []func(*s3.Options)

	mu          sync.Mutex
	sums        map[int32]string
	completeErr error // a failed CompleteMultipartUpload (already aborted)
}

func (c *mpuClient) UploadPart(ctx context.Context, in *s3.UploadPartInput, opts ...func(*s3.Options)) (*s3.UploadPartOutput, error) {
	if rs, ok := in.Body.(io.ReadSeeker); ok && in.ChecksumSHA256 == nil {
		h := sha256.New()
		if _, err := io.Copy(h, rs); err != nil {
			return nil, err
		}
		if _, err := rs.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		sum := base64.StdEncoding.EncodeToString(h.Sum(nil))
		in.ChecksumSHA256 = aws.String(sum)
		c.mu.Lock()
		c.sums[aws.ToInt32(in.PartNumber)] = sum
		c.mu.Unlock()
	}
	return c.S3APIClient.UploadPart(ctx, in, opts...)
}

// CreateMultipartUpload starts the upload. When the SDK had to send it more
// than once (a lost response: the first request may have created an
// upload the client never heard of), the stray uploads of this key are
// aborted, or they would hold their parts (and storage costs) until a
// bucket lifecycle rule removes them.
func (c *mpuClient) CreateMultipartUpload(ctx context.Context, in *s3.CreateMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CreateMultipartUploadOutput, error) {
	start := time.Now()
	out, err := c.S3APIClient.CreateMultipartUpload(ctx, in, opts...)
	if err != nil {
		return out, err
	}
	if res, ok := retry.GetAttemptResults(out.ResultMetadata); ok && len(res.Results) > 1 {
		c.abortStrays(ctx, in, aws.ToString(out.UploadId), time.Since(start))
	}
	return out, nil
}

// multipartLister is the part of *s3.Client that abortStrays needs.
type multipartLister interface {
	ListMultipartUploads(ctx context.Context, in *s3.ListMultipartUploadsInput, opts ...func(*s3.Options)) (*s3.ListMultipartUploadsOutput, error)
}

// abortStrays aborts the other uploads of in.Key that the server started
// within took before ours: those are the ones earlier attempts of our
// CreateMultipartUpload created (an overlapping upload of the same key
// started just as well, e.g. by a second gateway run, would be aborted too,
// and that run fails its completion and retries). Best effort: without
// s3:ListBucketMultipartUploads a stray stays for the lifecycle rule.
func (c *mpuClient) abortStrays(ctx context.Context, in *s3.CreateMultipartUploadInput, ours string, took time.Duration) {
	l, ok := c.S3APIClient.(multipartLister)
	if !ok {
		return
	}
	out, err := l.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: in.Bucket, Prefix: in.Key})
	if err != nil {
		return
	}
	var oursAt time.Time
	for _, u := range out.Uploads {
		if aws.ToString(u.UploadId) == ours && u.Initiated != nil {
			oursAt = *u.Initiated
		}
	}
	if oursAt.IsZero() {
		return
	}
	// Initiated has a resolution of one second on some servers.
	window := took + 2*time.Second
	for _, u := range out.Uploads {
		if aws.ToString(u.Key) != aws.ToString(in.Key) || aws.ToString(u.UploadId) == ours || u.Initiated == nil ||
			u.Initiated.Before(oursAt.Add(-window)) || u.Initiated.After(oursAt.Add(time.Second)) {
			continue
		}
		_, _ = c.S3APIClient.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
			Bucket: in.Bucket, Key: u.Key, UploadId: u.UploadId, ExpectedBucketOwner: in.ExpectedBucketOwner,
		})
	}
}

func (c *mpuClient) CompleteMultipartUpload(ctx context.Context, in *s3.CompleteMultipartUploadInput, opts ...func(*s3.Options)) (*s3.CompleteMultipartUploadOutput, error) {
	if in.MultipartUpload != nil {
		c.mu.Lock()
		for i := range in.MultipartUpload.Parts {
			p := &in.MultipartUpload.Parts[i]
			if p.ChecksumSHA256 == nil {
				if sum, ok := c.sums[aws.ToInt32(p.PartNumber)]; ok {
					p.ChecksumSHA256 = aws.String(sum)
				}
			}
		}
		c.mu.Unlock()
	}
	out, err := c.S3APIClient.CompleteMultipartUpload(ctx, in, append(opts, c.extra...)...)
	if err != nil {
		// The transfer manager (v0.5.7) reports a failed completion with
		// log.Printf on the process's stderr before it aborts. Abort here
		// instead, keep the error for multipartUpload, and let the transfer
		// manager finish quietly.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, aerr := c.S3APIClient.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{
			Bucket: in.Bucket, Key: in.Key, UploadId: in.UploadId, ExpectedBucketOwner: in.ExpectedBucketOwner,
		})
		c.mu.Lock()
		c.completeErr = err
		if aerr != nil {
			c.completeErr = fmt.Errorf("%w (and the multipart upload %s could not be aborted: %v)", err, aws.ToString(in.UploadId), aerr)
		}
		c.mu.Unlock()
		return &s3.CompleteMultipartUploadOutput{}, nil
	}
	return out, nil
}

func (c *mpuClient) parts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sums)
}

// progressListener forwards the transfer manager's byte counts, which its
// part workers emit concurrently.
type progressListener struct {
	mu *sync.Mutex
	fn func(int64)
}

func (p progressListener) OnObjectBytesTransferred(_ context.Context, e *tm.ObjectBytesTransferredEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fn(e.BytesTransferred)
}

// verifyReader hashes a body read from start to end and, at its end, returns
// an ErrChecksumMismatch error instead of io.EOF when the bytes read are not
// size bytes hashing to want. Seeking back to 0 restarts the hash (a Put, or
// an SDK retry, re-reading the body); any other seek turns the check off
// until the next rewind.
type verifyReader struct {
	r        *io.SectionReader
	size     int64
	want     string
	key      string
	progress func(int64)

	h       hash.Hash
	pos     int64
	skipped bool  // a seek moved away from sequential reading
	err     error // the mismatch, once found
}

func (v *verifyReader) Read(b []byte) (int, error) {
	if v.h == nil {
		v.h = sha256.New()
	}
	n, err := v.r.Read(b)
	if n > 0 {
		v.h.Write(b[:n])
		v.pos += int64(n)
		if v.progress != nil {
			v.progress(v.pos)
		}
	}
	if errors.Is(err, io.EOF) && !v.skipped {
		if got := hex.EncodeToString(v.h.Sum(nil)); v.pos != v.size || got != v.want {
			v.err = fmt.Errorf("upload %s: %w: read %d bytes with SHA-256 %s, expected %d bytes with %s (did the file change while it was uploaded?)",
				v.key, ErrChecksumMismatch, v.pos, got, v.size, v.want)
			return n, v.err
		}
	}
	return n, err
}

// Seek supports the rewinds a Put or an SDK retry does.
func (v *verifyReader) Seek(off int64, whence int) (int64, error) {
	pos, err := v.r.Seek(off, whence)
	if err != nil {
		return pos, err
	}
	switch {
	case pos == 0:
		v.h, v.pos, v.skipped = nil, 0, false
	case pos != v.pos:
		v.skipped = true
	}
	return pos, nil
}
