package lake

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync"

	"github.com/timelake/timelake/internal/storage"
)

// Data files in an S3 warehouse are stored with one PutObject each
// (storage.Upload: the SHA-256 of the body, computed once, is the request's
// checksum header and, over plain HTTP, its signed payload hash) from
// memory: most data files are small (a partition's rows of one landing
// file), and an append that spans many partitions writes one per
// partition. A file that grows past putFileBuffer bytes goes on through
// the warehouse's file system writer (storeIO's, which keeps it in a
// temporary file and uploads it on Close: a multipart upload for a large
// file), so no more than putFileBuffer bytes of a file are held here.
const putFileBuffer = 8 << 20

// pooledPutBuffer bounds the buffers kept for the next data file.
const pooledPutBuffer = 1 << 20

var putBuffers = sync.Pool{New: func() any { return new([]byte) }}

// putFile is a data file being written: held in memory and stored when it
// is closed, or streamed through spill once it is larger than
// putFileBuffer.
type putFile struct {
	ctx   context.Context
	store storage.Store
	key   string                         // the store key
	spill func() (io.WriteCloser, error) // the file system's writer of the same file
	limit int                            // putFileBuffer
	buf   *[]byte
	out   io.WriteCloser // after spill
}

func newPutFile(ctx context.Context, store storage.Store, key string, spill func() (io.WriteCloser, error)) *putFile {
	buf := putBuffers.Get().(*[]byte)
	*buf = (*buf)[:0]
	return &putFile{ctx: ctx, store: store, key: key, spill: spill, limit: putFileBuffer, buf: buf}
}

func (f *putFile) Write(p []byte) (int, error) {
	if f.out != nil {
		return f.out.Write(p)
	}
	if len(*f.buf)+len(p) <= f.limit {
		*f.buf = append(*f.buf, p...)
		return len(p), nil
	}
	out, err := f.spill()
	if err != nil {
		return 0, err
	}
	f.out = out
	_, err = out.Write(*f.buf)
	f.release()
	if err != nil {
		return 0, err
	}
	return out.Write(p)
}

// Close stores the file (or finishes the spilled writer's upload).
func (f *putFile) Close() error {
	if f.out != nil {
		return f.out.Close()
	}
	if f.buf == nil {
		return nil
	}
	body := *f.buf
	defer f.release()
	sum := sha256.Sum256(body)
	_, err := storage.Upload(f.ctx, f.store, f.key, bytes.NewReader(body), int64(len(body)),
		storage.UploadOptions{SHA256: hex.EncodeToString(sum[:]), ContentType: "application/octet-stream"})
	return err
}

// Abort drops the file without storing it (the data file writer's
// discard): a spilled file's writer is aborted when it can be (storeIO's
// uploads nothing), else closed.
func (f *putFile) Abort() error {
	if f.out != nil {
		if a, ok := f.out.(interface{ Abort() error }); ok {
			return a.Abort()
		}
		return f.out.Close()
	}
	f.release()
	return nil
}

func (f *putFile) release() {
	if f.buf == nil {
		return
	}
	if cap(*f.buf) <= pooledPutBuffer {
		putBuffers.Put(f.buf)
	}
	f.buf = nil
}
