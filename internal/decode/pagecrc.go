package decode

// Page checksums of a Parquet file are verified here, before its values
// are decoded: a page header may carry the CRC-32 (IEEE) of the page's
// bytes that follow it (the crc field of the Thrift PageHeader, over the
// compressed_page_size bytes of a data page v1 or v2 or a dictionary
// page), and arrow-go's reader never compares it, so a page whose bytes
// changed after it was written would load a changed value without a word.
//
// VerifyPageChecksums walks every column chunk of every row group once,
// from its first page (the dictionary page when there is one) to the end
// of its total_compressed_size, reading each page header with the Thrift
// compact protocol (only its type and sizes and its crc; every other field
// is skipped) and streaming the page's bytes through the checksum without
// holding them. A page without a crc is accepted as before. The walk
// trusts nothing of the footer: a column chunk outside the file, a page
// header that cannot be read or a page running past the end of its column
// chunk refuses the file, and every read stays inside the column chunk.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/apache/thrift/lib/go/thrift"
)

// pageReadBuffer is the buffer a column chunk is read through while its
// page checksums are verified.
const pageReadBuffer = 64 << 10

// Field ids of the Thrift PageHeader (parquet.thrift).
const (
	pageHeaderType             = 1
	pageHeaderUncompressedSize = 2
	pageHeaderCompressedSize   = 3
	pageHeaderCRC              = 4
)

// pageHeader holds the fields of a Parquet PageHeader the checksum needs.
type pageHeader struct {
	compressedSize int32
	hasSize        bool
	crc            uint32
	hasCRC         bool
}

// ParquetColumnChunk is a column chunk of a Parquet file as its footer
// places it, for VerifyPageChecksums.
type ParquetColumnChunk struct {
	// Column is the chunk's column path, dotted.
	Column string
	// Group is the chunk's row group (0-based) of Groups.
	Group, Groups int
	// Start is the offset of its first page (the dictionary page when
	// there is one), Length its total compressed size.
	Start, Length int64
	// Skip leaves the chunk out: encrypted, or without values (whose data
	// page offset writers may leave at 0), which the reader reads no page
	// of.
	Skip bool
	// Err is why the chunk's metadata does not read: the file is refused
	// there, and the chunks after it are not listed.
	Err error
}

// VerifyPageChecksums compares the crc of every page header of the file of
// key (size bytes read through r, chunks its column chunks in the order
// of the footer) that has one with the CRC-32 of the page's bytes, and
// refuses the file at the first page that differs, naming its column,
// row group and page. A format lists no chunk of a file whose writer
// predates page checksums and left the dictionary page header out of
// total_compressed_size (parquet-mr 1.2.8 and earlier, PARQUET-816).
func VerifyPageChecksums(ctx context.Context, key string, r io.ReaderAt, size int64, chunks []ParquetColumnChunk) error {
	br := bufio.NewReaderSize(nil, pageReadBuffer)
	for i, cc := range chunks {
		if cc.Err != nil {
			return parquetProblem(key, "", fmt.Sprintf("cannot read the metadata of column chunk %d of row group %d of %d", columnIndex(chunks, i)+1, cc.Group+1, cc.Groups), cc.Err)
		}
		if cc.Skip {
			continue
		}
		where := columnChunkPlace{key: key, column: cc.Column, group: cc.Group, groups: cc.Groups}
		start, length := cc.Start, cc.Length
		if start < 0 || length < 0 || start > size || length > size-start {
			return where.refuse(0, "column chunk outside the file", fmt.Sprintf("%d bytes from offset %d, the file has %d", length, start, size), nil)
		}
		br.Reset(io.NewSectionReader(r, start, length))
		if err := verifyColumnChunk(ctx, where, br, length); err != nil {
			return err
		}
	}
	return nil
}

// columnIndex is the index (0-based) of chunks[i] in its row group.
func columnIndex(chunks []ParquetColumnChunk, i int) int {
	n := 0
	for j := i - 1; j >= 0 && chunks[j].Group == chunks[i].Group; j-- {
		n++
	}
	return n
}

// columnChunkPlace names a column chunk in a refusal.
type columnChunkPlace struct {
	key    string
	column string
	group  int // 0-based
	groups int
}

// refuse is the refusal of the file for problem in page (1-based; 0 for
// the column chunk as a whole) of the column chunk, detail (if any) saying
// more.
func (w columnChunkPlace) refuse(page int, problem, detail string, err error) *FileError {
	reason := fmt.Sprintf("%s in row group %d of %d", problem, w.group+1, w.groups)
	if page > 0 {
		reason += fmt.Sprintf(", page %d", page)
	}
	if detail != "" {
		reason += ": " + detail
	}
	return parquetProblem(w.key, w.column, reason, err)
}

// verifyColumnChunk walks the pages of a column chunk of length bytes read
// through br.
func verifyColumnChunk(ctx context.Context, where columnChunkPlace, br *bufio.Reader, length int64) error {
	chunk := &chunkTransport{r: br}
	conf := &thrift.TConfiguration{MaxMessageSize: int32(min(length, math.MaxInt32))}
	proto := thrift.NewTCompactProtocolConf(chunk, conf)
	for page := 1; chunk.read < length; page++ {
		if err := ctx.Err(); err != nil {
			return &FileError{Key: where.key, Reason: "decoding cancelled", Err: err}
		}
		h, err := readPageHeader(ctx, proto)
		if err != nil {
			return where.refuse(page, "unreadable page header", "", err)
		}
		if !h.hasSize || h.compressedSize < 0 {
			return where.refuse(page, "page without a valid size", fmt.Sprintf("its header gives %d bytes", h.compressedSize), nil)
		}
		left := length - chunk.read
		if int64(h.compressedSize) > left {
			return where.refuse(page, "page past the end of its column chunk", fmt.Sprintf("the page has %d bytes, the column chunk %d left", h.compressedSize, left), nil)
		}
		sum, err := chunk.checksum(int64(h.compressedSize))
		if err != nil {
			return where.refuse(page, "unreadable page", "", err)
		}
		if h.hasCRC && sum != h.crc {
			return where.refuse(page, "page checksum mismatch",
				fmt.Sprintf("the page's bytes changed after it was written (CRC 0x%08x in its header, 0x%08x of its bytes)", h.crc, sum), nil)
		}
	}
	return nil
}

// readPageHeader reads a Thrift PageHeader, keeping its sizes and crc and
// skipping its other fields.
func readPageHeader(ctx context.Context, proto *thrift.TCompactProtocol) (pageHeader, error) {
	var h pageHeader
	if _, err := proto.ReadStructBegin(ctx); err != nil {
		return h, err
	}
	for {
		_, typ, id, err := proto.ReadFieldBegin(ctx)
		if err != nil {
			return h, err
		}
		if typ == thrift.STOP {
			break
		}
		switch {
		case id == pageHeaderCompressedSize && typ == thrift.I32:
			if h.compressedSize, err = proto.ReadI32(ctx); err != nil {
				return h, err
			}
			h.hasSize = true
		case id == pageHeaderCRC && typ == thrift.I32:
			crc, err := proto.ReadI32(ctx)
			if err != nil {
				return h, err
			}
			h.crc, h.hasCRC = uint32(crc), true
		default: // pageHeaderType, pageHeaderUncompressedSize and the rest
			if err := proto.Skip(ctx, typ); err != nil {
				return h, err
			}
		}
		if err := proto.ReadFieldEnd(ctx); err != nil {
			return h, err
		}
	}
	return h, proto.ReadStructEnd(ctx)
}

// chunkTransport is the Thrift transport a column chunk's page headers are
// read through; it counts the bytes read of the column chunk, headers and
// pages.
type chunkTransport struct {
	r    *bufio.Reader
	read int64
}

// checksum reads the next n bytes of the column chunk and returns their
// CRC-32 (IEEE), without holding more than the read buffer.
func (t *chunkTransport) checksum(n int64) (uint32, error) {
	var sum uint32
	for n > 0 {
		b, err := t.r.Peek(int(min(n, int64(t.r.Size()))))
		sum = crc32.Update(sum, crc32.IEEETable, b)
		_, _ = t.r.Discard(len(b))
		t.read += int64(len(b))
		n -= int64(len(b))
		if err != nil && n > 0 {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
	return sum, nil
}

func (t *chunkTransport) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.read += int64(n)
	return n, err
}

func (t *chunkTransport) ReadByte() (byte, error) {
	b, err := t.r.ReadByte()
	if err == nil {
		t.read++
	}
	return b, err
}

func (t *chunkTransport) Write([]byte) (int, error) {
	return 0, errors.New("a column chunk is read only")
}

func (t *chunkTransport) Close() error                { return nil }
func (t *chunkTransport) Flush(context.Context) error { return nil }
func (t *chunkTransport) Open() error                 { return nil }
func (t *chunkTransport) IsOpen() bool                { return true }

// RemainingBytes is unknown to Thrift's size checks, which
// TConfiguration.MaxMessageSize bounds to the column chunk.
func (t *chunkTransport) RemainingBytes() uint64 { return math.MaxUint64 }
