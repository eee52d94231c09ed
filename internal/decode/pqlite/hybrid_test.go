package pqlite

import (
	"errors"
	"io"
	"slices"
	"testing"
)

// decodeN reads n values of d.
func decodeN(d *hybridDecoder, n int) ([]uint32, error) {
	var out []uint32
	for range n {
		v, err := d.next()
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// TestHybrid: the RLE/bit-packed hybrid is read only as far as the values
// asked for, so a bit-packed run cut short after them still reads, and a
// long run is not held whole.
func TestHybrid(t *testing.T) {
	// A run of five 3s, then a bit-packed group of 0, 1, 2, 3, 0, 1, 2, 3
	// (2 bits each).
	data := []byte{0x0a, 0x03, 0x03, 0xe4, 0xe4}
	got, err := decodeN(newHybrid(data, 2), 13)
	if err != nil || !slices.Equal(got, []uint32{3, 3, 3, 3, 3, 0, 1, 2, 3, 0, 1, 2, 3}) {
		t.Errorf("hybrid = %v, %v", got, err)
	}
	if _, err := decodeN(newHybrid(data, 2), 14); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("14 of 13 values: %v", err)
	}
	cut := data[:4]
	if got, err := decodeN(newHybrid(cut, 2), 9); err != nil || len(got) != 9 {
		t.Errorf("9 values of a run cut short after them = %v, %v", got, err)
	}
	if _, err := decodeN(newHybrid(cut, 2), 10); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("10 values of a run cut short after 9: %v", err)
	}
	if _, err := newHybrid(data, 33).next(); err == nil {
		t.Error("a bit width of 33 read")
	}
	// A run of 2^31-1 ones in 6 bytes.
	long := newHybrid([]byte{0xfe, 0xff, 0xff, 0xff, 0x0f, 0x01}, 1)
	if got, err := decodeN(long, 3); err != nil || !slices.Equal(got, []uint32{1, 1, 1}) || long.run != 1<<31-4 {
		t.Errorf("a long run = %v, %v (%d left)", got, err, long.run)
	}
}

// TestInt96Nanos: INT96 timestamps within a nanosecond timestamp's range
// read, those outside it or with a time of day of a day or more do not.
func TestInt96Nanos(t *testing.T) {
	at := func(day uint32, nanos uint64) (v [12]byte) {
		for i := range 8 {
			v[i] = byte(nanos >> (8 * i))
		}
		for i := range 4 {
			v[8+i] = byte(day >> (8 * i))
		}
		return v
	}
	if ns, ok := int96Nanos(at(2_440_588, 5)); !ok || ns != 5 {
		t.Errorf("the epoch + 5 ns = %d, %v", ns, ok)
	}
	if ns, ok := int96Nanos(at(2_440_587, 0)); !ok || ns != -86_400_000_000_000 {
		t.Errorf("a day before the epoch = %d, %v", ns, ok)
	}
	if _, ok := int96Nanos(at(2_440_588, 86_400_000_000_000)); ok {
		t.Error("a time of day of a whole day read")
	}
	if _, ok := int96Nanos(at(2_440_588+106_752, 0)); ok {
		t.Error("a day past 2262 read")
	}
}
