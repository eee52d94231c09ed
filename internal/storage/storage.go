// Package storage is the small object-store abstraction shared by the landing
// bucket and the warehouse: an S3-compatible bucket (AWS S3, Tigris, MinIO,
// versitygw) or a local folder, with the conditional create that the ingest
// lease and the catalog-free Iceberg commit rely on.
//
// Keys are always slash-separated and relative to the store's root (bucket
// prefix or folder). SDK types never leave this package: callers classify
// errors with errors.Is against ErrNotExist and ErrPreconditionFailed.
package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// ErrNotExist is returned (wrapped) when an object or its bucket does not
// exist: S3 404 NoSuchKey/NotFound, or a missing file.
var ErrNotExist = errors.New("does not exist")

// ErrPreconditionFailed is returned (wrapped) when a conditional write loses:
// S3 answers 412 PreconditionFailed for If-None-Match: * on an existing key or
// If-Match with a stale ETag, and 409 ConditionalRequestConflict when two
// conditional writes race (S3 API, PutObject "conditional writes").
var ErrPreconditionFailed = errors.New("precondition failed")

// ErrNotS3 marks a listing answered 404 Not Found without an S3 error code:
// an S3 service answers a listing of a bucket it does not have with
// NoSuchBucket, so the endpoint is not an S3 API (a web site, or a URL with
// a path). Diagnose explains it.
var ErrNotS3 = errors.New("answered 404 Not Found without an S3 error")

// ObjectInfo describes one object.
type ObjectInfo struct {
	Key          string    // key relative to the store root, slash-separated
	Size         int64     // bytes
	ETag         string    // opaque version token; S3's quoted ETag, or size+mtime for folders
	LastModified time.Time // UTC
	// Mode is the permission bits of a folder store's file; 0 on S3.
	Mode fs.FileMode
	// Changed is a folder store's file's status change time (ChangeTime):
	// this host's clock, where LastModified is the writer's, which may be
	// ahead. Zero on S3 (whose LastModified is the store's own clock).
	Changed time.Time
	// Metadata is the object's user metadata (x-amz-meta-<name>, names in
	// lower case) as Get returns it from S3; nil from a listing, from Stat
	// and from a folder store.
	Metadata map[string]string
}

// PutOptions are the conditions of a Put.
type PutOptions struct {
	// IfAbsent makes the write a conditional create (S3 If-None-Match: *;
	// exclusive create on a folder). It fails with ErrPreconditionFailed when
	// the key exists.
	IfAbsent bool
	// IfMatch makes the write a compare-and-swap: it fails with
	// ErrPreconditionFailed unless the current object's ETag equals IfMatch.
	IfMatch string
	// ContentType is the MIME type stored with the object (S3 only).
	ContentType string
	// Mode is the permission bits of the new file of a folder store (0:
	// 0644 less the umask); S3 ignores it.
	Mode fs.FileMode
	// Metadata is user metadata S3 stores with the object (x-amz-meta-
	// <name>, ASCII values; Get returns it); a folder store ignores it.
	Metadata map[string]string
	// ModTime, when set, is the modification time of the new file of a
	// folder store (set before it appears under its key); S3 ignores it
	// (an object's LastModified is the time of its write: keep the time
	// in Metadata).
	ModTime time.Time
}

// Store is a flat key/value object store. Every method honours ctx.
type Store interface {
	// List calls fn for every object whose key starts with prefix, in
	// ascending byte order of keys, reading the listing page by page. An error
	// from fn stops the listing and is returned.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error
	// Get opens an object for reading. The caller closes the reader.
	// A missing object is ErrNotExist.
	Get(ctx context.Context, key string) (io.ReadCloser, ObjectInfo, error)
	// Stat returns an object's info without its body; ErrNotExist if missing.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Put writes an object from body (read to its end) under the conditions
	// in opts and returns the new object's info.
	Put(ctx context.Context, key string, body io.ReadSeeker, opts PutOptions) (ObjectInfo, error)
	// Copy copies src to dst (overwriting dst) within the store; a folder
	// store's copy keeps the permission bits of src.
	Copy(ctx context.Context, src, dst string) error
	// Delete removes an object. Deleting a missing object is not an error
	// (S3 DeleteObject semantics).
	Delete(ctx context.Context, key string) error
	// DeleteIfMatch removes an object only while its ETag is etag: a
	// conditional delete (S3 DeleteObject with If-Match; a compare under
	// the store's lock on a folder). Another ETag is ErrPreconditionFailed
	// and the object stays; a missing object is not an error. It is how a
	// writer removes an object it wrote without removing a newer one put
	// there meanwhile (the ingest lease, a landing file re-sent while it was
	// loaded). Servers that ignore If-Match on DELETE delete unconditionally.
	DeleteIfMatch(ctx context.Context, key, etag string) error
	// URI names the store root for messages: s3://bucket/prefix or a path.
	URI() string
}

// MaxKeyBytes is the longest key S3 accepts (1,024 bytes of UTF-8, S3 object
// key naming rules).
const MaxKeyBytes = 1024

// ValidateKey checks that key is a safe relative object key: not empty, at
// most MaxKeyBytes, no leading slash, no "." or ".." segments, no empty
// segment, no control characters and no backslashes. It is the check of
// the keys timelake makes or takes from people and notifications; keys a
// store lists pass the looser ValidateObjectKey.
func ValidateKey(key string) error {
	switch {
	case key == "":
		return errors.New("invalid key: empty")
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("invalid key %q: longer than %d bytes", key, MaxKeyBytes)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("invalid key %q: must not start with /", key)
	case strings.HasSuffix(key, "/"):
		return fmt.Errorf("invalid key %q: must not end with /", key)
	}
	for _, r := range key {
		if unicode.IsControl(r) || r == '\\' {
			return fmt.Errorf("invalid key %q: control characters and backslashes are not allowed", key)
		}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("invalid key %q: empty, \".\" or \"..\" path segment", key)
		}
	}
	return nil
}

// MaxNameBytes is the longest file name, one segment of a path, that
// common file systems take (NAME_MAX of ext4, XFS, btrfs, APFS: 255 bytes).
const MaxNameBytes = 255

// ValidateObjectKey checks that key is a key a store can hold and a folder
// store can map to a file below its root: not empty, no leading or trailing
// slash, no empty, "." or ".." segment, no NUL byte, and no path separator
// of the system other than "/" (a backslash on Windows). Unlike ValidateKey
// it takes any other character at any length: it is the check of keys a
// store lists, which timelake must be able to read, quarantine, requeue and
// delete whatever their names (a local file named with a tab or a
// backslash, a path longer than 1,024 bytes).
func ValidateObjectKey(key string) error {
	switch {
	case key == "":
		return errors.New("invalid key: empty")
	case strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/"):
		return fmt.Errorf("invalid key %q: must not start or end with /", key)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("invalid key %q: NUL byte", key)
	case filepath.Separator != '/' && strings.ContainsRune(key, filepath.Separator):
		return fmt.Errorf("invalid key %q: %q is a path separator here", key, filepath.Separator)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("invalid key %q: empty, \".\" or \"..\" path segment", key)
		}
	}
	return nil
}

// ReadAll reads a whole (small) object: metadata files, leases, reports.
func ReadAll(ctx context.Context, s Store, key string) ([]byte, ObjectInfo, error) {
	rc, info, err := s.Get(ctx, key)
	if err != nil {
		return nil, ObjectInfo{}, err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return nil, ObjectInfo{}, fmt.Errorf("read %s: %w", key, err)
	}
	return b, info, nil
}

// HoldsBody reports whether key holds exactly body: how a write recognises
// its own object after a lost response (the SDK's retry of a conditional
// create that succeeded reads 412); false, nil when key does not exist or
// holds another object.
func HoldsBody(ctx context.Context, s Store, key string, body []byte) (bool, error) {
	got, _, err := ReadAll(ctx, s, key)
	if errors.Is(err, ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, body), nil
}

// CreateOwn is a conditional create of key holding body that recognises
// its own write: a 412 whose key holds exactly body is the request's own
// object, written before its response was lost. Only another object under
// key is ErrPreconditionFailed.
func CreateOwn(ctx context.Context, s Store, key string, body []byte, opts PutOptions) error {
	opts.IfAbsent = true
	_, err := s.Put(ctx, key, bytes.NewReader(body), opts)
	if !errors.Is(err, ErrPreconditionFailed) {
		return err
	}
	own, rerr := HoldsBody(ctx, s, key, body)
	if rerr != nil {
		return fmt.Errorf("%w; read it back: %w", err, rerr)
	}
	if own {
		return nil
	}
	return err
}
