package pqlite

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// deltaInfo is what deltaStream finds of a DELTA_BINARY_PACKED stream.
type deltaInfo struct {
	total int // the values its header declares
	held  int // the values its blocks hold (at most total)
	end   int // the stream's bytes
	// What arrow-go's decoder refuses that parquet-go's reads: in the
	// header (before the count), a block size the mini-blocks do not
	// divide; in the blocks, a bit width past the integers' or, of 32-bit
	// integers, a minimum delta beyond them.
	badHeader, badBlock error
}

// deltaStream walks the DELTA_BINARY_PACKED stream of bits-bit integers
// at the start of data as parquet-go's decoder reads it (a block's bit
// widths and packed bytes cut short are read as zeros, the blocks end with
// the values or the data), without decoding it. ok is false when the
// header does not read: parquet-go refuses it.
func deltaStream(data []byte, bits int) (d deltaInfo, ok bool) {
	var h [3]uint64
	pos := 0
	for i := range h {
		v, n := binary.Uvarint(data[pos:])
		if n <= 0 {
			return d, false
		}
		h[i], pos = v, pos+n
	}
	_, n := binary.Varint(data[pos:])
	if n <= 0 {
		return d, false
	}
	pos += n
	blockSize, miniBlocks := h[0], h[1]
	if miniBlocks == 0 || blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<16 ||
		(blockSize/miniBlocks)%32 != 0 || h[2] > 1<<31-1 {
		return d, false
	}
	d.total, d.end = int(h[2]), pos
	if blockSize%miniBlocks != 0 || blockSize/miniBlocks == 0 {
		d.badHeader = fmt.Errorf("values per miniblock must be a nonzero multiple of 32, got %d miniblocks for %d values", miniBlocks, blockSize)
		return d, true
	}
	if d.total == 0 {
		return d, true
	}
	perMiniBlock := int(blockSize / miniBlocks)
	left := d.total - 1
	for left > 0 && pos < len(data) {
		minDelta, n := binary.Varint(data[pos:])
		if n <= 0 {
			return d, false // parquet-go refuses it
		}
		pos += n
		if bits == 32 && (minDelta < math.MinInt32 || minDelta > math.MaxInt32) && d.badBlock == nil {
			d.badBlock = fmt.Errorf("minimum delta %d exceeds INT32 range", minDelta)
		}
		widths := data[pos:]
		if uint64(len(widths)) > miniBlocks {
			widths = widths[:miniBlocks]
		}
		pos += len(widths)
		for _, w := range widths {
			if int(w) > bits && d.badBlock == nil {
				d.badBlock = fmt.Errorf("delta bit width %d exceeds decoder width %d", w, bits)
			}
			left -= min(perMiniBlock, left)
			pos = min(pos+perMiniBlock*int(w)/8, len(data))
			if left == 0 {
				break
			}
		}
	}
	d.held, d.end = d.total-left, pos
	return d, true
}

// checkDelta refuses the DELTA_BINARY_PACKED streams of bits-bit integers
// at the start of data (streams of them, one after another) that declare
// more values than the page's want, as arrow-go does, or more than their
// blocks hold, as parquet-go does, before parquet-go allocates the values
// the header declares; and those arrow-go refuses otherwise (deltaInfo).
func checkDelta(data []byte, want, streams, bits int) error {
	for range streams {
		d, ok := deltaStream(data, bits)
		switch {
		case !ok:
			return nil
		case d.badHeader != nil:
			return d.badHeader
		case d.total > want:
			return fmt.Errorf("invalid delta value count %d for %d buffered values", d.total, want)
		case d.badBlock != nil:
			return d.badBlock
		case d.held < d.total:
			return fmt.Errorf("%d missing values: %w", d.total-d.held, io.ErrUnexpectedEOF)
		}
		data = data[d.end:]
	}
	return nil
}
