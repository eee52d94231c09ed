package pqlite

import (
	"encoding/binary"
	"fmt"
	"io"
)

// deltaStream walks the DELTA_BINARY_PACKED stream at the start of data
// as parquet-go's decoder reads it (a block's bit widths and packed bytes
// cut short are read as zeros, the blocks end with the values or the
// data), without decoding it: the values its header declares, the values
// its blocks hold (at most those) and the stream's bytes. ok is false when
// the header does not read: parquet-go refuses it.
func deltaStream(data []byte) (total, held, end int, ok bool) {
	var h [3]uint64
	pos := 0
	for i := range h {
		v, n := binary.Uvarint(data[pos:])
		if n <= 0 {
			return 0, 0, 0, false
		}
		h[i], pos = v, pos+n
	}
	if _, n := binary.Varint(data[pos:]); n <= 0 {
		return 0, 0, 0, false
	} else {
		pos += n
	}
	blockSize, miniBlocks := h[0], h[1]
	if miniBlocks == 0 || blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<16 ||
		(blockSize/miniBlocks)%32 != 0 || h[2] > 1<<31-1 {
		return 0, 0, 0, false
	}
	total = int(h[2])
	if total == 0 {
		return 0, 0, pos, true
	}
	perMiniBlock := int(blockSize / miniBlocks)
	left := total - 1
	for left > 0 && pos < len(data) {
		if _, n := binary.Varint(data[pos:]); n <= 0 {
			return 0, 0, 0, false // the min delta: parquet-go refuses it
		} else {
			pos += n
		}
		widths := data[pos:]
		if uint64(len(widths)) > miniBlocks {
			widths = widths[:miniBlocks]
		}
		pos += len(widths)
		for _, w := range widths {
			left -= min(perMiniBlock, left)
			pos = min(pos+perMiniBlock*int(w)/8, len(data))
			if left == 0 {
				break
			}
		}
	}
	return total, total - left, pos, true
}

// checkDelta refuses the DELTA_BINARY_PACKED streams at the start of data
// (streams of them, one after another) that declare more values than the
// page's want, as arrow-go does, or more than their blocks hold, as
// parquet-go does, before parquet-go allocates the values the header
// declares.
func checkDelta(data []byte, want, streams int) error {
	for range streams {
		total, held, end, ok := deltaStream(data)
		if !ok {
			return nil
		}
		if total > want {
			return fmt.Errorf("invalid delta value count %d for %d buffered values", total, want)
		}
		if held < total {
			return fmt.Errorf("%d missing values: %w", total-held, io.ErrUnexpectedEOF)
		}
		data = data[end:]
	}
	return nil
}
