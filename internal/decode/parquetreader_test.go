package decode

import (
	"bytes"
	"slices"
	"testing"
)

// TestBigEndianWords: a Parquet decimal's big-endian two's complement
// bytes, sign-extended to words; more bytes than the words hold are
// refused, as pqarrow refuses them, even where they only repeat the sign.
func TestBigEndianWords(t *testing.T) {
	ones := func(n int) []byte { return bytes.Repeat([]byte{0xff}, n) }
	for _, c := range []struct {
		v    []byte
		want []uint64
	}{
		{[]byte{0x01}, []uint64{0, 1}},
		{[]byte{0xff}, []uint64{^uint64(0), ^uint64(0)}},
		{[]byte{0x80, 0x00}, []uint64{^uint64(0), 0xffffffffffff8000}},
		{append(make([]byte, 4), 0x01, 0x02), []uint64{0, 0x0102}},
		{append(make([]byte, 15), 0x7f), []uint64{0, 0x7f}},
		{append(ones(15), 0x80), []uint64{^uint64(0), 0xffffffffffffff80}},
		{append(make([]byte, 16), 0x7f), nil},
		{append([]byte{0x01}, make([]byte, 16)...), nil}, // 2^128
		{nil, nil},
	} {
		got, err := bigEndianWords(c.v, 2)
		if (err != nil) != (c.want == nil) || !slices.Equal(got, c.want) {
			t.Errorf("bigEndianWords(%x) = %x, %v; want %x", c.v, got, err, c.want)
		}
	}
}
