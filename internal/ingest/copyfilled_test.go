package ingest

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// countingWriter counts the writes it is given.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func TestCopyFilled(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16,000 bytes
	for _, c := range []struct {
		name string
		src  io.Reader
	}{
		{"one byte a read", iotest.OneByteReader(bytes.NewReader(data))},
		{"half a buffer a read", iotest.HalfReader(bytes.NewReader(data))},
		{"data with EOF", iotest.DataErrReader(bytes.NewReader(data))},
	} {
		var w countingWriter
		n, err := copyFilled(&w, c.src, make([]byte, 4096))
		if err != nil || n != int64(len(data)) || !bytes.Equal(w.Bytes(), data) {
			t.Errorf("%s: copied %d bytes, err %v, same bytes %v; want %d, nil, true", c.name, n, err, bytes.Equal(w.Bytes(), data), len(data))
		}
		// 16,000 bytes through a 4,096-byte buffer: 3 full writes and the rest.
		if w.writes != 4 {
			t.Errorf("%s: %d writes, want 4 (full buffers only)", c.name, w.writes)
		}
	}

	// A read error after some bytes: the bytes read before it are written
	// and counted, and the error is the reader's (not taken for an end).
	cut := io.MultiReader(bytes.NewReader(data[:5000]), iotest.ErrReader(io.ErrUnexpectedEOF))
	var w countingWriter
	n, err := copyFilled(&w, cut, make([]byte, 4096))
	if !errors.Is(err, io.ErrUnexpectedEOF) || n != 5000 || !bytes.Equal(w.Bytes(), data[:5000]) {
		t.Errorf("cut body: copied %d bytes, err %v; want 5000 and io.ErrUnexpectedEOF", n, err)
	}

	// A failed write stops the copy with the writer's error.
	full := errors.New("disk full")
	n, err = copyFilled(failingWriter{full}, bytes.NewReader(data), make([]byte, 4096))
	if !errors.Is(err, full) || n != 0 {
		t.Errorf("failing writer: copied %d bytes, err %v; want 0 and %v", n, err, full)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// miscountingWriter takes every byte it is given and reports off more.
type miscountingWriter struct{ off int }

func (w miscountingWriter) Write(p []byte) (int, error) { return len(p) + w.off, nil }

// TestCopyFilledInvalidWrite: a writer reporting more bytes written than
// it was given, or a negative count, fails the copy as io.Copy fails it,
// and no such count is added to the bytes copied.
func TestCopyFilledInvalidWrite(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 1000)
	for _, off := range []int{1, -5000} {
		n, err := copyFilled(miscountingWriter{off}, bytes.NewReader(data), make([]byte, 4096))
		want, wantErr := io.CopyBuffer(miscountingWriter{off}, io.LimitReader(bytes.NewReader(data), 1<<20), make([]byte, 4096))
		if err == nil || wantErr == nil || err.Error() != wantErr.Error() || n != want {
			t.Errorf("writer reporting %+d bytes: copied %d, err %v; io.Copy %d, %v", off, n, err, want, wantErr)
		}
	}
}
