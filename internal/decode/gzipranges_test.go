package decode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// TestGzipJSONRanges: gzipped JSON Lines decompressed on one goroutine and
// parsed in blocks on others give the rows of the sequential read of the
// same file and of its uncompressed twin, in order, and their errors word
// for word (line numbers too): a bad value or a line that is not JSON in
// a late block, two keys of one column in different blocks, an array or a
// byte order mark starting a line, a line beyond MaxRecordBytes, a file
// of several gzip members, a truncated file.
func TestGzipJSONRanges(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "site_id", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	var b strings.Builder
	for i := range 3_000 {
		fmt.Fprintf(&b, `{"time":"2026-01-05T10:%02d:%02dZ","site":{"id":"s%d"},"v":%d.25}`+"\n", i/60%60, i%60, i%9, i)
	}
	good := b.String() // about 200 KB: 20 blocks of 10,000 bytes
	long := `{"time":"2026-01-05T11:00:00Z","site":{"id":"` + strings.Repeat("x", 70_000) + `"}}` + "\n"
	cases := map[string]string{
		"good":                       good,
		"no line end at the end":     strings.TrimSuffix(good, "\n"),
		"blank lines and CRLF":       "\n\n" + strings.ReplaceAll(good[:50_000], "\n", "\r\n") + "\n\n" + good,
		"a byte order mark":          string(utf8BOM) + good,
		"two keys, one column":       good + `{"time":"2026-01-05T11:00:00Z","site_id":"x","v":1}` + "\n",
		"a bad value late":           good + `{"time":"2026-01-05T11:00:00Z","v":"warm"}` + "\n" + good,
		"a line that is not JSON":    good + `{"time":` + "\n" + good,
		"a new key in a late block":  good + `{"time":"2026-01-05T11:00:00Z","rh":40}` + "\n",
		"a bad value early":          `{"time":"2026-01-05T09:00:00Z","v":"warm"}` + "\n" + good,
		"an array line":              good + `[{"time":"2026-01-05T11:00:00Z","v":1}]` + "\n" + good,
		"a byte order mark late":     good + string(utf8BOM) + `{"time":"2026-01-05T11:00:00Z","v":1}` + "\n" + good,
		"a line longer than a block": good + long + good,
		"a line too long":            good + `{"time":"2026-01-05T11:00:00Z","site":{"id":"` + strings.Repeat("x", 300_000) + `"}}` + "\n",
		"escapes and nulls":          good + `{"time":"2026-01-05T11:00:00Z","site":{"id":"s\u0041\n"},"v":null}` + "\n" + good,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			render := func(key string, file []byte, par int, opts DecodeOptions) string {
				opts.Target, opts.TimeColumn, opts.Parallelism, opts.ChunkBytes, opts.BatchRows, opts.MaxRecordBytes =
					target, "time", par, 10_000, 500, 256<<10
				d, err := decode(t, key, file, opts)
				if err != nil {
					return "error: " + strings.ReplaceAll(err.Error(), key, "KEY")
				}
				out := fmt.Sprint(rows(t, d))
				for _, r := range d.Rejected {
					out += fmt.Sprintf(" rejected row %d line %d: %s", r.Row, r.Line, r.Reason)
				}
				return out
			}
			zipped := gz(t, data)
			for _, opts := range []DecodeOptions{{}, {OnError: OnErrorSkipRows}} {
				plain := render("gw/a.jsonl", []byte(data), 1, opts)
				seq := render("gw/a.jsonl.gz", zipped, 1, opts)
				par := render("gw/a.jsonl.gz", zipped, 3, opts)
				if seq != par || plain != par {
					t.Errorf("%s: in blocks: %.300s\nsequential: %.300s\nuncompressed: %.300s", opts.OnError, par, seq, plain)
				}
				if (name == "good" || name == "escapes and nulls") && strings.HasPrefix(par, "error") {
					t.Errorf("a good file refused: %s", par)
				}
			}
		})
	}

	// Several gzip members, cut anywhere in a line.
	data := cases["a bad value late"]
	members := append(append(gz(t, good[:12_345]), gz(t, good[12_345:])...), gz(t, data)...)
	twin := good + data
	d, err := decode(t, "gw/a.jsonl", []byte(twin), DecodeOptions{Target: target, TimeColumn: "time", OnError: OnErrorSkipRows})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint(rows(t, d), d.Rejected[0].Row, d.Rejected[0].Line)
	for _, skip := range []OnError{"", OnErrorSkipRows} {
		d, err := decode(t, "gw/a.jsonl.gz", members, DecodeOptions{Target: target, TimeColumn: "time", Parallelism: 3,
			ChunkBytes: 10_000, OnError: skip})
		if skip == "" {
			if fe := mustFileError(t, err); fe.Line != 3_000*2+1 || !strings.Contains(fe.Error(), "warm") {
				t.Errorf("several members: %v; want the bad value on line %d", err, 3_000*2+1)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(rows(t, d), d.Rejected[0].Row, d.Rejected[0].Line); got != want {
			t.Errorf("several members, skip-rows: %.300s\nwant %.300s", got, want)
		}
	}

	// A truncated file: an error naming it, as the sequential read's.
	zipped := gz(t, good+good)
	for _, cut := range []int{len(zipped) / 2, len(zipped) - 4} {
		var errs []string
		for _, par := range []int{1, 3} {
			_, err := decode(t, "gw/a.jsonl.gz", zipped[:cut], DecodeOptions{Target: target, TimeColumn: "time",
				Parallelism: par, ChunkBytes: 10_000})
			if err == nil || !strings.Contains(err.Error(), "gw/a.jsonl.gz") {
				t.Fatalf("truncated at %d, parallelism %d: %v; want an error naming the file", cut, par, err)
			}
			errs = append(errs, err.Error())
		}
		if errs[0] != errs[1] {
			t.Errorf("truncated at %d: in blocks %q, sequential %q", cut, errs[1], errs[0])
		}
	}
}

// TestGzipJSONRangesBomb: gzipped JSON Lines that expand like a gzip bomb
// are refused in blocks as sequentially.
func TestGzipJSONRangesBomb(t *testing.T) {
	if testing.Short() {
		t.Skip("decompresses 160 MiB")
	}
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String},
	)
	row := `{"time":"2026-01-05T10:00:00Z","v":"` + strings.Repeat("a", 8<<10) + `"}` + "\n"
	bomb := gzipWrite(t, repeat(row, (160<<20)/len(row)))
	_, err := Decode(context.Background(), Source{Key: "gw/bomb.jsonl.gz", R: bytes.NewReader(bomb), Size: int64(len(bomb))},
		DecodeOptions{Target: target, TimeColumn: "time", Parallelism: 2})
	var fe *FileError
	if !errors.As(err, &fe) || !strings.Contains(fe.Reason, "a gzip bomb") || fe.Key != "gw/bomb.jsonl.gz" {
		t.Fatalf("Decode = %v, want the bomb refused", err)
	}
}

// TestGzipJSONRangesOpen: gzipped JSON Lines of a table are read in blocks
// (blocks small enough for a small piece), an array and a file that is
// not gzip data are not; pieces hold the rows of a sequential read.
func TestGzipJSONRangesOpen(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	var b strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&b, `{"time":"2026-01-05T10:%02d:%02dZ","v":%d}`+"\n", i/60%60, i%60, i)
	}
	lines := b.String()
	open := func(data []byte, opts DecodeOptions) batchSource {
		t.Helper()
		ro, err := resolveOptions("gw/a.jsonl.gz", opts)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := openGzipJSONRanges(ro, Source{Key: "gw/a.jsonl.gz", R: bytes.NewReader(data), Size: int64(len(data))}, target)
		if err != nil {
			t.Fatal(err)
		}
		return bs
	}
	opts := DecodeOptions{Target: target, TimeColumn: "time", Parallelism: 2, PieceBytes: 256 << 10}
	if bs := open(gz(t, "["+strings.TrimSuffix(strings.ReplaceAll(lines, "}\n", "},"), ",")+"]"), opts); bs != nil {
		t.Errorf("an array read in blocks")
	}
	if bs := open([]byte(lines), opts); bs != nil {
		t.Errorf("text that is not gzip read in blocks")
	}
	bs := open(gz(t, lines), opts)
	if bs == nil {
		t.Fatal("JSON Lines not read in blocks")
	}
	g := bs.(*gzipRanges)
	if g.block != 64<<10 {
		t.Errorf("blocks of %d bytes under a piece of 256 KiB, want 64 KiB", g.block)
	}
	bs.close()

	collect := func(par int) (out []string) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		o := opts
		o.Parallelism, o.Mem = par, mem
		data := gz(t, lines)
		err := DecodeEach(context.Background(), Source{Key: "gw/a.jsonl.gz", R: bytes.NewReader(data), Size: int64(len(data))}, o,
			func(d *Decoded) error {
				defer d.Release()
				if d.Piece != len(out) {
					t.Errorf("piece %d after %d pieces", d.Piece, len(out))
				}
				out = append(out, fmt.Sprint(rows(t, d)))
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	seq, par := collect(1), collect(2)
	trim := func(pieces []string) string { // the rows of all pieces
		return strings.NewReplacer("] [", " ", "[", "", "]", "").Replace(strings.Join(pieces, " "))
	}
	if trim(seq) != trim(par) || len(par) < 2 {
		t.Errorf("the rows of %d pieces in blocks differ from those of %d sequential ones", len(par), len(seq))
	}
}

// TestGzipJSONRangesStop: a decode stopped in the middle of a file read in
// blocks (its caller's error) leaves no goroutine running and no batch
// unreleased.
func TestGzipJSONRangesStop(t *testing.T) {
	target := arrowTarget(t,
		iceberg.NestedField{ID: 1, Name: "time", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.Float64},
	)
	var b strings.Builder
	for i := range 50_000 {
		fmt.Fprintf(&b, `{"time":"2026-01-05T10:%02d:%02dZ","v":%d}`+"\n", i/60%60, i%60, i)
	}
	data := gz(t, b.String())
	before := runtime.NumGoroutine()
	stop := errors.New("enough")
	for _, opts := range []DecodeOptions{
		{Target: target, TimeColumn: "time", Parallelism: 2, ChunkBytes: 10_000, PieceBytes: 64 << 10},
		{Target: target, TimeColumn: "time", Parallelism: 3, ChunkBytes: 10_000, PieceBytes: 64 << 10},
	} {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		opts.Mem = mem
		pieces := 0
		err := DecodeEach(context.Background(), Source{Key: "gw/a.jsonl.gz", R: bytes.NewReader(data), Size: int64(len(data))}, opts,
			func(d *Decoded) error {
				d.Release()
				if pieces++; pieces == 2 {
					return stop
				}
				return nil
			})
		if !errors.Is(err, stop) {
			t.Fatalf("DecodeEach = %v, want the caller's error", err)
		}
		mem.AssertSize(t, 0)
	}
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the decodes, %d before", n, before)
	}
}
