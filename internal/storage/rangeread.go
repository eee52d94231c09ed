package storage

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// RangeReader is the optional capability of a Store that reads part of an
// object without the rest: an S3 GetObject with a Range header, a section
// of a folder's file. GetRange (the function) uses it when the store has
// it, and a whole Get otherwise.
type RangeReader interface {
	// GetRange reads bytes [off, off+n) of an object, fewer where the
	// object ends first, as GetRange (the function) describes.
	GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
}

var (
	_ RangeReader = (*S3Store)(nil)
	_ RangeReader = (*LocalStore)(nil)
)

// GetRange opens bytes [off, off+n) of the object at key for reading (the
// caller closes the reader): fewer bytes where the object ends before
// off+n. off must lie within the object and n be positive (S3 answers a
// range that starts past the end with 416 InvalidRange). A missing object
// is ErrNotExist. A store without RangeReader (a wrapper of a store, in
// tests) serves it from a whole Get, skipping the bytes before off.
func GetRange(ctx context.Context, s Store, key string, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n <= 0 {
		return nil, fmt.Errorf("get %s: invalid range of %d bytes at %d", key, n, off)
	}
	if rr, ok := s.(RangeReader); ok {
		return rr.GetRange(ctx, key, off, n)
	}
	rc, _, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return skipTo(key, rc, off, n)
}

// skipTo reads rc past its first off bytes and returns it limited to n
// more.
func skipTo(key string, rc io.ReadCloser, off, n int64) (io.ReadCloser, error) {
	if _, err := io.CopyN(io.Discard, rc, off); err != nil && err != io.EOF {
		rc.Close()
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	return readCloser{io.LimitReader(rc, n), rc}, nil
}

// readCloser reads from one reader and closes another (the body under it).
type readCloser struct {
	io.Reader
	io.Closer
}

// GetRange issues GetObject with Range: bytes=off-(off+n-1) (RFC 9110
// range requests; S3 answers the bytes there are when the range runs past
// the object's end).
func (s *S3Store) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n <= 0 {
		return nil, fmt.Errorf("get %s: invalid range of %d bytes at %d", key, n, off)
	}
	gctx, cancel := context.WithCancel(ctx)
	out, err := s.client.GetObject(gctx, &s3.GetObjectInput{
		Bucket: aws.String(s.bucket),
		Key:    aws.String(s.prefix + key),
		Range:  aws.String("bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+n-1, 10)),
	}, s.readOpts()...)
	if err != nil {
		cancel()
		return nil, classify("get", key, err)
	}
	// A server or proxy that ignores Range answers 200 with the whole
	// object: its first bytes are not those at off.
	if cr := aws.ToString(out.ContentRange); !strings.HasPrefix(cr, "bytes "+strconv.FormatInt(off, 10)+"-") &&
		(cr != "" || aws.ToInt64(out.ContentLength) > n) {
		out.Body.Close()
		cancel()
		return nil, fmt.Errorf("get %s: asked for %d bytes at %d, the server answered %q (%d bytes): it does not honour Range requests", key, n, off, cr, aws.ToInt64(out.ContentLength))
	}
	return guardBody(out.Body, key, cancel), nil
}

// GetRange opens the file and reads the section [off, off+n) of it.
func (s *LocalStore) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if off < 0 || n <= 0 {
		return nil, fmt.Errorf("get %s: invalid range of %d bytes at %d", key, n, off)
	}
	rc, _, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if f, ok := rc.(*os.File); ok {
		return readCloser{io.NewSectionReader(f, off, n), f}, nil
	}
	return skipTo(key, rc, off, n)
}
