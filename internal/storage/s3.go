package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TigrisConsistentHeader asks Tigris for a globally consistent read or
// conditional write (Tigris docs, "Consistency"). Other servers ignore it.
const TigrisConsistentHeader = "X-Tigris-Consistent"

// S3API is the part of *s3.Client that S3Store uses (same signatures, so the
// SDK client fits with no adapter).
type S3API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *s3.HeadObjectInput, opts ...func(*s3.Options)) (*s3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	CopyObject(ctx context.Context, in *s3.CopyObjectInput, opts ...func(*s3.Options)) (*s3.CopyObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *s3.DeleteObjectsInput, opts ...func(*s3.Options)) (*s3.DeleteObjectsOutput, error)
}

// S3Store is a Store on an S3 bucket, optionally below a key prefix.
type S3Store struct {
	client S3API
	bucket string
	prefix string // "" or "a/b/" (with trailing slash)

	// consistentAll adds the Tigris consistency header to every request;
	// consistentWrites only to conditional writes.
	consistentAll, consistentWrites bool

	// noBatchDelete is set once the server refused DeleteObjects
	// (DeleteKeys): single deletes from then on.
	noBatchDelete atomic.Bool
}

var (
	_ Store        = (*S3Store)(nil)
	_ BatchDeleter = (*S3Store)(nil)
	_ BatchDeleter = (*LocalStore)(nil)
)

// S3StoreOptions tune an S3Store.
type S3StoreOptions struct {
	// Tigris sends X-Tigris-Consistent: true on conditional writes.
	Tigris bool
	// ConsistentReads also sends it on every read and listing; the lake's
	// metadata store sets it so that a commit always sees the newest version.
	ConsistentReads bool
}

// NewS3Store returns a store on bucket below prefix ("" for the whole bucket).
func NewS3Store(client S3API, bucket, prefix string, opts S3StoreOptions) *S3Store {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &S3Store{
		client:           client,
		bucket:           bucket,
		prefix:           prefix,
		consistentAll:    opts.Tigris && opts.ConsistentReads,
		consistentWrites: opts.Tigris,
	}
}

// URI returns s3://bucket/prefix.
func (s *S3Store) URI() string {
	return strings.TrimSuffix("s3://"+s.bucket+"/"+s.prefix, "/")
}

// Bucket returns the bucket name.
func (s *S3Store) Bucket() string { return s.bucket }

// FullKey returns the bucket-relative key of a store key.
func (s *S3Store) FullKey(key string) string { return s.prefix + key }

func withHeader(name, value string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.SetHeaderValue(name, value))
	}
}

func (s *S3Store) readOpts() []func(*s3.Options) {
	if s.consistentAll {
		return []func(*s3.Options){withHeader(TigrisConsistentHeader, "true")}
	}
	return nil
}

// classify maps S3 errors to the package sentinels. The original error
// stays in the chain (errors.As finds the smithy.APIError, Diagnose explains
// it) while the message stays short.
func classify(op, key string, err error) error {
	if op == "list" && notS3Answer(err) {
		return &opError{fmt.Sprintf("%s %s: %v", op, key, ErrNotS3), ErrNotS3, err}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound", "NoSuchBucket", "NoSuchUpload":
			return &opError{fmt.Sprintf("%s %s: %v (%s)", op, key, ErrNotExist, ae.ErrorCode()), ErrNotExist, err}
		case "PreconditionFailed", "ConditionalRequestConflict":
			return &opError{fmt.Sprintf("%s %s: %v (%s)", op, key, ErrPreconditionFailed, ae.ErrorCode()), ErrPreconditionFailed, err}
		}
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case http.StatusNotFound:
			if ae != nil && ae.ErrorCode() != "" {
				// A 404 with another code is not a missing object:
				// versitygw answers an unknown access key id with 404
				// XAdminUserNotFound (Diagnose explains it).
				break
			}
			return &opError{fmt.Sprintf("%s %s: %v", op, key, ErrNotExist), ErrNotExist, err}
		case http.StatusPreconditionFailed:
			return &opError{fmt.Sprintf("%s %s: %v", op, key, ErrPreconditionFailed), ErrPreconditionFailed, err}
		}
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// notS3Answer reports whether err is an answer no S3 service gives to a
// listing (of a bucket's objects, or of the buckets): 404 Not Found with
// no S3 error code, or only the SDK's "NotFound" for a body it could not
// read as one.
func notS3Answer(err error) bool {
	var re *awshttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotFound {
		return false
	}
	var ae smithy.APIError
	return !errors.As(err, &ae) || ae.ErrorCode() == "" || ae.ErrorCode() == "NotFound"
}

// opError is a classified S3 error: a short message, the sentinel, and the
// SDK's error.
type opError struct {
	msg      string
	sentinel error
	cause    error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return []error{e.sentinel, e.cause} }

// List pages through ListObjectsV2 (which returns keys in ascending UTF-8
// binary order, S3 API reference). It asks for url-encoded keys
// (encoding-type=url): an XML listing cannot carry every character a key
// may hold (ESC and most other control characters), and a server that
// writes it anyway puts U+FFFD in their place, a key no GET finds. AWS
// S3, MinIO and Tigris encode the keys and say so (EncodingType url in the
// answer); the keys are then decoded (url.QueryUnescape: %XX, and + for a
// space). An answer that does not say so holds the keys as they are (a
// server that ignores the parameter, as versitygw does).
func (s *S3Store) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket:       aws.String(s.bucket),
		Prefix:       aws.String(s.prefix + prefix),
		EncodingType: types.EncodingTypeUrl,
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx, s.readOpts()...)
		if err != nil {
			return classify("list", s.URI()+"/"+prefix, err)
		}
		for _, o := range page.Contents {
			raw := aws.ToString(o.Key)
			if page.EncodingType == types.EncodingTypeUrl {
				if raw, err = url.QueryUnescape(raw); err != nil {
					return fmt.Errorf("list %s/%s: the server's url-encoded key %q does not decode: %w", s.URI(), prefix, aws.ToString(o.Key), err)
				}
			}
			key := strings.TrimPrefix(raw, s.prefix)
			if key == "" || strings.HasSuffix(key, "/") {
				continue // folder markers made by consoles
			}
			info := ObjectInfo{Key: key, Size: aws.ToInt64(o.Size), ETag: aws.ToString(o.ETag)}
			if o.LastModified != nil {
				info.LastModified = o.LastModified.UTC()
			}
			if err := fn(info); err != nil {
				return err
			}
		}
	}
	return nil
}

// Get streams an object.
func (s *S3Store) Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error) {
	gctx, cancel := context.WithCancel(ctx)
	out, err := s.client.GetObject(gctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	}, s.readOpts()...)
	if err != nil {
		cancel()
		return nil, ObjectInfo{}, classify("get", key, err)
	}
	info := ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}
	if out.LastModified != nil {
		info.LastModified = out.LastModified.UTC()
	}
	if len(out.Metadata) > 0 {
		info.Metadata = out.Metadata
	}
	return guardBody(out.Body, key, cancel), info, nil
}

// Stat issues HeadObject.
func (s *S3Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	}, s.readOpts()...)
	if err != nil {
		return ObjectInfo{}, classify("stat", key, err)
	}
	info := ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: aws.ToString(out.ETag)}
	if out.LastModified != nil {
		info.LastModified = out.LastModified.UTC()
	}
	return info, nil
}

// Put issues PutObject with If-None-Match: * or If-Match as asked.
func (s *S3Store) Put(ctx context.Context, key string, body io.ReadSeeker, opts PutOptions) (ObjectInfo, error) {
	if err := s.validKey(key); err != nil {
		return ObjectInfo{}, err
	}
	size, err := body.Seek(0, io.SeekEnd)
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
	}
	if _, err := body.Seek(0, io.SeekStart); err != nil {
		return ObjectInfo{}, fmt.Errorf("put %s: %w", key, err)
	}
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(s.prefix + key),
		Body:          body,
		ContentLength: aws.Int64(size),
	}
	if opts.ContentType != "" {
		in.ContentType = aws.String(opts.ContentType)
	}
	if len(opts.Metadata) > 0 {
		in.Metadata = opts.Metadata
	}
	var extra []func(*s3.Options)
	if opts.IfAbsent {
		in.IfNoneMatch = aws.String("*")
	}
	if opts.IfMatch != "" {
		in.IfMatch = aws.String(opts.IfMatch)
	}
	if (opts.IfAbsent || opts.IfMatch != "") && s.consistentWrites || s.consistentAll {
		extra = append(extra, withHeader(TigrisConsistentHeader, "true"))
	}
	out, err := s.client.PutObject(ctx, in, extra...)
	if err != nil {
		return ObjectInfo{}, classify("put", key, err)
	}
	return ObjectInfo{Key: key, Size: size, ETag: aws.ToString(out.ETag)}, nil
}

// Copy issues a server-side CopyObject.
func (s *S3Store) Copy(ctx context.Context, src, dst string) error {
	if err := s.validKey(dst); err != nil {
		return err
	}
	_, err := s.client.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket:     aws.String(s.bucket),
		Key:        aws.String(s.prefix + dst),
		CopySource: aws.String(s.bucket + "/" + pathEscape(s.prefix+src)),
	}, s.readOpts()...)
	if err != nil {
		return classify("copy "+src+" to", dst, err)
	}
	return nil
}

// validKey checks a key to write: one the store can hold
// (ValidateObjectKey) within S3's 1,024 bytes, prefix included (S3 object
// key naming rules).
func (s *S3Store) validKey(key string) error {
	if err := ValidateObjectKey(key); err != nil {
		return err
	}
	if n := len(s.prefix + key); n > MaxKeyBytes {
		return fmt.Errorf("invalid key %q: %d bytes with the store's prefix, S3 takes at most %d", key, n, MaxKeyBytes)
	}
	return nil
}

// pathEscape escapes each segment of a key for the x-amz-copy-source header
// (S3 CopyObject: the source must be URL-encoded).
func pathEscape(key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}

// Delete issues DeleteObject.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
	})
	var ae smithy.APIError
	if err != nil && !(errors.As(err, &ae) && ae.ErrorCode() == "NoSuchKey") {
		return classify("delete", key, err)
	}
	return nil
}

// DeleteIfMatch issues DeleteObject with If-Match (S3 conditional deletes).
// A server that answers NotImplemented for the condition gets a HEAD, a
// compare and a plain delete instead.
func (s *S3Store) DeleteIfMatch(ctx context.Context, key, etag string) error {
	var extra []func(*s3.Options)
	if s.consistentWrites || s.consistentAll {
		extra = append(extra, withHeader(TigrisConsistentHeader, "true"))
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{
		Bucket:  aws.String(s.bucket),
		Key:     aws.String(s.prefix + key),
		IfMatch: aws.String(etag),
	}, extra...)
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorCode() == "NotImplemented" {
		info, err := s.Stat(ctx, key)
		if errors.Is(err, ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if info.ETag != etag {
			return fmt.Errorf("delete %s: %w", key, ErrPreconditionFailed)
		}
		return s.Delete(ctx, key)
	}
	err = classify("delete", key, err)
	if errors.Is(err, ErrNotExist) {
		return nil // AWS answers 404 to If-Match on a missing key
	}
	return err
}
