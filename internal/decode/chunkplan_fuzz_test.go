package decode

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzPlanTextChunks: planTextChunks gives the plan of sequentialPlan on
// any bytes, chunk size and number of workers; the bytes may be repeated
// to make a file of several read blocks.
func FuzzPlanTextChunks(f *testing.F) {
	f.Add([]byte("a,b\n1,2\n3,4\n"), uint32(1), uint8(2), uint16(0))
	f.Add([]byte("\ufeffa,b\r\n1,2\r\n\r\n3,4"), uint32(3), uint8(3), uint16(5))
	f.Add([]byte("t,v\nxxxxxxxxxxxxxxxxxxxxxxx\n\n"), uint32(70000), uint8(4), uint16(9000))
	f.Add([]byte("t,v\n1,\"2\"\n"), uint32(2), uint8(1), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint32, workers uint8, repeat uint16) {
		if len(data) == 0 {
			return
		}
		if r := int(repeat); r > 0 && len(data)*r <= 3<<20 {
			data = bytes.Repeat(data, r+1)
		}
		c := max(int64(chunk), 1) // Decode never plans with less than a byte
		if n := 4096 * c; int64(len(data)) > n {
			data = data[:n] // no more than 4,096 chunks: the plan reads up to 128 KiB for each
		}
		size := int64(len(data))
		wantHeader, wantChunks, wantErr := sequentialPlan(bytes.NewReader(data), size, c)
		header, chunks, err := planTextChunks(bytes.NewReader(data), size, c, int(workers))
		if err != nil || wantErr != nil {
			t.Fatalf("errors %v and %v", err, wantErr)
		}
		if !bytes.Equal(header, wantHeader) || !reflect.DeepEqual(chunks, wantChunks) {
			t.Fatalf("%d bytes, chunk %d, %d workers: header %q and %d chunks, want %q and %d chunks (first difference %s)",
				size, c, workers, header, len(chunks), wantHeader, len(wantChunks), firstChunkDifference(chunks, wantChunks))
		}
	})
}
