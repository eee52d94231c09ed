package lake

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/timelake/timelake/internal/storage"
)

// storeIO is iceberg-go's file system of an S3 warehouse (the IO its
// tables read and write data files, delete files, manifests and manifest
// lists through) on the lake's storage.Store: every byte goes through
// storage, with its error classification, its retries, its Tigris
// consistency header and its checksummed uploads. It maps
// s3://<bucket>/<prefix>/<key> (or s3a://) to the store key <key> and
// refuses any other URI with errOutsideWarehouse; tableFS confines it
// further to one table's location.
//
// iceberg-go's IO takes no context: storeIO does its I/O under the one
// given to the lake's fsF.
type storeIO struct {
	ctx    context.Context
	store  storage.Store
	bucket string // the warehouse's bucket
	prefix string // the warehouse's key prefix: "" or "a/b/"
}

var (
	_ icebergio.WriteFileIO = (*storeIO)(nil)
	_ icebergio.StatIO      = (*storeIO)(nil)
	_ icebergio.File        = (*storeFile)(nil)
	_ icebergio.FileWriter  = (*storeWriter)(nil)
)

// errOutsideWarehouse is returned (in an *fs.PathError naming the URI) for
// a URI storeIO does not map to a key of its store: another scheme or
// bucket, a key outside the warehouse's prefix, or an invalid key
// (storage.ValidateKey).
var errOutsideWarehouse = errors.New("outside the warehouse")

// newStoreIO returns the file system of the S3 warehouse below prefix in
// bucket on store (rooted at the warehouse), doing its I/O under ctx.
func newStoreIO(ctx context.Context, store storage.Store, bucket, prefix string) *storeIO {
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &storeIO{ctx: ctx, store: store, bucket: bucket, prefix: prefix}
}

// key returns the store key of uri, or a *fs.PathError of op wrapping
// errOutsideWarehouse.
func (s *storeIO) key(op, uri string) (string, error) {
	for _, scheme := range []string{"s3://", "s3a://"} {
		k, ok := strings.CutPrefix(uri, scheme+s.bucket+"/")
		if !ok {
			continue
		}
		if k, ok = strings.CutPrefix(k, s.prefix); ok && storage.ValidateKey(k) == nil {
			return k, nil
		}
		break
	}
	return "", &iofs.PathError{Op: op, Path: uri, Err: errOutsideWarehouse}
}

// pathError wraps a store's error for uri as iceberg-go's IO returns
// errors: an *fs.PathError, a missing object satisfying
// errors.Is(err, fs.ErrNotExist) (as it does storage.ErrNotExist).
func pathError(op, uri string, err error) error {
	if errors.Is(err, storage.ErrNotExist) {
		err = notExistError{err}
	}
	return &iofs.PathError{Op: op, Path: uri, Err: err}
}

// notExistError is a store's storage.ErrNotExist that is also
// fs.ErrNotExist.
type notExistError struct{ error }

func (e notExistError) Unwrap() error        { return e.error }
func (e notExistError) Is(target error) bool { return target == iofs.ErrNotExist }

// Open stats the object and returns it read whole into memory when it is
// at most smallFileBytes (one GET), else a file whose reads are ranged
// GETs.
func (s *storeIO) Open(uri string) (icebergio.File, error) {
	key, err := s.key("open", uri)
	if err != nil {
		return nil, err
	}
	obj, err := s.store.Stat(s.ctx, key)
	if err != nil {
		return nil, pathError("open", uri, err)
	}
	info := memFileInfo{name: path.Base(key), size: obj.Size, mod: obj.LastModified}
	if obj.Size <= smallFileBytes {
		b, _, err := storage.ReadAll(s.ctx, s.store, key)
		if err != nil {
			return nil, pathError("open", uri, err)
		}
		if int64(len(b)) != obj.Size {
			// Replaced between the stat and the read: data files and
			// manifests never are, so this is not the file the metadata
			// names.
			return nil, &iofs.PathError{Op: "open", Path: uri, Err: fmt.Errorf("%d bytes read where the object had %d: it changed meanwhile", len(b), obj.Size)}
		}
		return &memFile{Reader: bytes.NewReader(b), info: info}, nil
	}
	return &storeFile{io: s, uri: uri, key: key, info: info}, nil
}

// Stat lets iceberg-go size an object (an embedded manifest) without
// opening it: one HEAD.
func (s *storeIO) Stat(uri string) (iofs.FileInfo, error) {
	key, err := s.key("stat", uri)
	if err != nil {
		return nil, err
	}
	obj, err := s.store.Stat(s.ctx, key)
	if err != nil {
		return nil, pathError("stat", uri, err)
	}
	return memFileInfo{name: path.Base(key), size: obj.Size, mod: obj.LastModified}, nil
}

// smallFileBytes is the size up to which an object is read whole when it
// is opened, with one GET: a Parquet reader asks for the footer's length,
// the footer and every column chunk (about seven requests for a small
// data file; an Avro manifest is read block by block), each 10 to 30 ms
// on object storage. Compaction reads up to readConcurrency files at
// once, so this holds at most 16 MiB more.
const smallFileBytes = 1 << 20

// memFile is a small object read whole.
type memFile struct {
	*bytes.Reader
	info memFileInfo
}

func (f *memFile) Stat() (iofs.FileInfo, error) { return f.info, nil }
func (f *memFile) Close() error                 { return nil }

type memFileInfo struct {
	name string
	size int64
	mod  time.Time
}

func (i memFileInfo) Name() string        { return i.name }
func (i memFileInfo) Size() int64         { return i.size }
func (i memFileInfo) Mode() iofs.FileMode { return 0o444 }
func (i memFileInfo) ModTime() time.Time  { return i.mod }
func (i memFileInfo) IsDir() bool         { return false }
func (i memFileInfo) Sys() any            { return nil }

// storeFile is a large object opened for reading: each ReadAt is one
// ranged GET of the bytes asked for; Read streams one ranged GET from the
// offset to the end, opened again only after a Seek elsewhere.
type storeFile struct {
	io   *storeIO
	uri  string
	key  string
	info memFileInfo

	mu     sync.Mutex
	off    int64         // the offset of Read and Seek
	body   io.ReadCloser // the GET Read reads from, nil until Read
	bodyAt int64         // the offset of body's next byte
}

func (f *storeFile) Stat() (iofs.FileInfo, error) { return f.info, nil }

// ReadAt reads len(p) bytes at off (fewer, with io.EOF, at the end of the
// object) with one ranged GET. It may be called concurrently.
func (f *storeFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &iofs.PathError{Op: "read", Path: f.uri, Err: iofs.ErrInvalid}
	}
	if off >= f.info.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), f.info.size-off)
	if want == 0 {
		return 0, nil
	}
	rc, err := storage.GetRange(f.io.ctx, f.io.store, f.key, off, want)
	if err != nil {
		return 0, pathError("read", f.uri, err)
	}
	defer rc.Close()
	n, err := io.ReadFull(rc, p[:want])
	if err != nil {
		return n, pathError("read", f.uri, fmt.Errorf("%d bytes at %d where the object has %d: %w", n, off, f.info.size, err))
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (f *storeFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off >= f.info.size {
		return 0, io.EOF
	}
	if f.body != nil && f.bodyAt != f.off {
		f.body.Close()
		f.body = nil
	}
	if f.body == nil {
		rc, err := storage.GetRange(f.io.ctx, f.io.store, f.key, f.off, f.info.size-f.off)
		if err != nil {
			return 0, pathError("read", f.uri, err)
		}
		f.body, f.bodyAt = rc, f.off
	}
	n, err := f.body.Read(p)
	f.off += int64(n)
	f.bodyAt += int64(n)
	if err != nil { // the next Read asks again from where this one stopped
		f.body.Close()
		f.body = nil
	}
	if err == io.EOF && f.off < f.info.size {
		err = pathError("read", f.uri, fmt.Errorf("%d bytes where the object has %d: %w", f.off, f.info.size, io.ErrUnexpectedEOF))
	} else if err != nil && err != io.EOF {
		err = pathError("read", f.uri, err)
	}
	return n, err
}

func (f *storeFile) Seek(offset int64, whence int) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.info.size
	default:
		return 0, &iofs.PathError{Op: "seek", Path: f.uri, Err: iofs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &iofs.PathError{Op: "seek", Path: f.uri, Err: iofs.ErrInvalid}
	}
	f.off = offset
	return offset, nil
}

func (f *storeFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.body != nil {
		f.body.Close()
		f.body = nil
	}
	return nil
}

// Remove deletes the object (a missing one is no error: S3 DeleteObject).
func (s *storeIO) Remove(uri string) error {
	key, err := s.key("remove", uri)
	if err != nil {
		return err
	}
	if err := s.store.Delete(s.ctx, key); err != nil {
		return pathError("remove", uri, err)
	}
	return nil
}

// WriteFile stores b with one checksummed PutObject (storage.Upload).
func (s *storeIO) WriteFile(uri string, b []byte) error {
	key, err := s.key("write", uri)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	_, err = storage.Upload(s.ctx, s.store, key, bytes.NewReader(b), int64(len(b)),
		storage.UploadOptions{SHA256: hex.EncodeToString(sum[:]), ContentType: "application/octet-stream"})
	if err != nil {
		return pathError("write", uri, err)
	}
	return nil
}

// Create returns a writer that keeps the file's bytes in a temporary file
// and uploads them when it is closed (storage.Upload: one PutObject, or a
// multipart upload from storage.DefaultMultipartThreshold bytes).
func (s *storeIO) Create(uri string) (icebergio.FileWriter, error) {
	key, err := s.key("create", uri)
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp("", fmt.Sprintf("%s%d-*", UploadTempPrefix, os.Getpid()))
	if err != nil {
		return nil, &iofs.PathError{Op: "create", Path: uri, Err: err}
	}
	return &storeWriter{io: s, uri: uri, key: key, tmp: tmp, sum: sha256.New()}, nil
}

// UploadTempPrefix starts the names of the temporary files storeIO keeps
// data files in until they are uploaded: UploadTempPrefix<pid>-<random>,
// in the system's temporary folder. A process killed meanwhile leaves
// them; the next ingest run removes those of processes that ended, as it
// removes its download copies.
const UploadTempPrefix = "timelake-upload-"

// storeWriter is a file being written through storeIO: its bytes go to a
// temporary file (and its SHA-256) until Close uploads them.
type storeWriter struct {
	io  *storeIO
	uri string
	key string
	tmp *os.File
	sum hash.Hash
	n   int64
	// multipartThreshold is the storage.UploadOptions of the upload: 0
	// for the default (tests lower it).
	multipartThreshold int64
	closed             bool
	err                error // the first write's error: Close uploads nothing
}

func (w *storeWriter) Write(p []byte) (int, error) {
	if w.closed {
		return 0, &iofs.PathError{Op: "write", Path: w.uri, Err: iofs.ErrClosed}
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.tmp.Write(p)
	w.sum.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		w.err = &iofs.PathError{Op: "write", Path: w.uri, Err: err}
		return n, w.err
	}
	return n, nil
}

// ReadFrom copies r to the file.
func (w *storeWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w}, r)
}

// Abort drops the file: the temporary file is removed and nothing is
// uploaded (a data file the writer discards).
func (w *storeWriter) Abort() error {
	if w.closed {
		return nil
	}
	w.closed = true
	w.tmp.Close()
	return os.Remove(w.tmp.Name())
}

// Close uploads the file and removes the temporary file, whatever the
// upload's outcome; after a failed write it uploads nothing and returns
// that write's error.
func (w *storeWriter) Close() error {
	if w.closed {
		return &iofs.PathError{Op: "close", Path: w.uri, Err: iofs.ErrClosed}
	}
	w.closed = true
	defer func() {
		w.tmp.Close()
		os.Remove(w.tmp.Name())
	}()
	if w.err != nil {
		return w.err
	}
	_, err := storage.Upload(w.io.ctx, w.io.store, w.key, w.tmp, w.n, storage.UploadOptions{
		SHA256:             hex.EncodeToString(w.sum.Sum(nil)),
		ContentType:        "application/octet-stream",
		MultipartThreshold: w.multipartThreshold,
	})
	if err != nil {
		return pathError("write", w.uri, err)
	}
	return nil
}
