package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineEnds: lineEnds keeps a quoted CRLF (by doubling its CR for
// encoding/csv) and refuses the first carriage return outside quotes that
// is not part of a CRLF, naming its line, field and text, the same
// whether the text comes in one read or byte by byte.
func TestLineEnds(t *testing.T) {
	tests := []struct {
		in, out string // out: what the CSV reader reads, up to the refused CR
		err     *lineEndError
	}{
		{in: "a,b\r\nc,d\r\n", out: "a,b\r\nc,d\r\n"},
		{in: "a,b\nc,d", out: "a,b\nc,d"},
		{in: "a,\"b\r\nc\"\r\n", out: "a,\"b\r\r\nc\"\r\n"},
		{in: "a,\"b\r\r\nc\"\n", out: "a,\"b\r\r\r\nc\"\n"},
		{in: "a,\"b\rc\"\n", out: "a,\"b\rc\"\n"},
		{in: "a,\"b\"\"\r\n\"\"c\"\n", out: "a,\"b\"\"\r\r\n\"\"c\"\n"},
		{in: "a,b\r\r\nc,d\r\r\n", out: "a,b\r", err: &lineEndError{line: 1, field: 1, text: "b\r", crcrlf: true}},
		{in: "h\n\"x\ny\",b\r\r\n", out: "h\n\"x\ny\",b\r", err: &lineEndError{line: 3, field: 1, text: "b\r", crcrlf: true}},
		{in: "a,b\rc,d\n", out: "a,b\r", err: &lineEndError{line: 1, field: 1, text: "b\rc"}},
		{in: "a,\"b\"\r\r\n", out: "a,\"b\"\r", err: &lineEndError{line: 1, field: 1, text: "\"b\"\r", crcrlf: true}},
		{in: "a,b\n\r\r", out: "a,b\n\r", err: &lineEndError{line: 2, field: 0, text: "\r"}},
		{in: "a,b\r", out: "a,b\r", err: &lineEndError{line: 1, field: 1, text: "b\r", atEOF: true}},
		{in: "a;b,c\r\r\n", out: "a;b,c\r", err: &lineEndError{line: 1, field: 1, text: "b,c\r", crcrlf: true}},
	}
	for _, tc := range tests {
		for _, split := range []bool{false, true} {
			var r io.Reader = strings.NewReader(tc.in)
			if split {
				r = iotest.OneByteReader(r)
			}
			comma := ','
			if strings.Contains(tc.in, ";") {
				comma = ';'
			}
			out, err := io.ReadAll(newLineEnds(r, comma, true))
			var le *lineEndError
			errors.As(err, &le)
			switch {
			case string(out) != tc.out:
				t.Errorf("%q (byte by byte %v): read %q, want %q", tc.in, split, out, tc.out)
			case tc.err == nil && err != nil, tc.err != nil && (le == nil || *le != *tc.err):
				t.Errorf("%q (byte by byte %v): error %#v (%v), want %#v", tc.in, split, le, err, tc.err)
			}
		}
	}
}

// TestLineEndsLateInALargeFile: a CR CR LF line far into a file decoded
// in parallel ranges, and beyond the sample Check decodes, is refused with
// its row, line, column and value by both.
func TestLineEndsLateInALargeFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("time,device,temp\n")
	n := 0
	for ; b.Len() < 2*sniffBytes; n++ {
		fmt.Fprintf(&b, "2026-01-05T10:%02d:%02dZ,d%d,1.5\n", n/60%60, n%60, n%3)
	}
	b.WriteString("2026-01-05T11:00:00Z,d1,2.5\r\r\n")
	data := []byte(b.String())
	check := func(what string, err error) {
		t.Helper()
		fe := mustFileError(t, err)
		if fe.Row != int64(n+1) || fe.Line != int64(n+2) || fe.Column != "temp" || fe.Value != "2.5\r" || !strings.Contains(fe.Reason, "CR CR LF") {
			t.Errorf("%s: %v (row %d line %d column %q value %q), want row %d line %d column temp value \"2.5\\r\"", what, err, fe.Row, fe.Line, fe.Column, fe.Value, n+1, n+2)
		}
	}
	for _, par := range []int{1, 2} {
		_, err := decode(t, "gw/late.csv", data, DecodeOptions{Target: tableTarget(t), TimeColumn: "time", Parallelism: par, ChunkBytes: 4096})
		check(fmt.Sprintf("Decode, parallelism %d", par), err)
	}
	_, err := Check(context.Background(), Source{Key: "gw/late.csv", R: bytes.NewReader(data), Size: int64(len(data))},
		DecodeOptions{TimeColumn: "time"}, CheckOptions{SampleRows: 10})
	check("Check", err)
}
