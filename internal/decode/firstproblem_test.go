package decode

import (
	"fmt"
	"strings"
	"testing"
)

// TestFirstProblemFirst: of a value the table refuses and a row whose
// structure is broken (the wrong number of fields), the one on the earlier
// row is reported, whichever path reads the file (sequential, ranges
// decoded in parallel, gzip in blocks): the broken row used to be reported
// first when both were in one batch, the value being checked only once
// its batch was read whole.
func TestFirstProblemFirst(t *testing.T) {
	target := tableTarget(t)
	file := func(badValue, broken int) string {
		var b strings.Builder
		b.WriteString("time,device,temp\n")
		for i := 1; i <= 6000; i++ {
			temp := fmt.Sprintf("%d.5", i%40)
			if i == badValue {
				temp = "abc"
			}
			fmt.Fprintf(&b, "2026-01-05T00:%02d:%02dZ,d%d,%s", (i/60)%60, i%60, i%7, temp)
			if i == broken {
				b.WriteString(",extra")
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		badValue, broken int
		want             string
	}{
		{4, 5001, `row 4 (line 5), column "temp": cannot parse "abc" as double`},
		{5001, 4, `row 4 (line 5): wrong number of fields: the line has 4, the header has 3`},
		{4000, 4001, `row 4000 (line 4001), column "temp": cannot parse "abc" as double`},
	} {
		text := file(tc.badValue, tc.broken)
		for _, f := range []struct {
			name string
			key  string
			data []byte
			opts DecodeOptions
		}{
			{"sequential", "gw/a.csv", []byte(text), DecodeOptions{Parallelism: 1}},
			{"in ranges", "gw/a.csv", []byte(text), DecodeOptions{Parallelism: 2, ChunkBytes: 16 << 10}},
			{"one range", "gw/a.csv", []byte(text), DecodeOptions{Parallelism: 2}},
			{"gzip, sequential", "gw/a.csv.gz", gz(t, text), DecodeOptions{Parallelism: 1}},
			{"gzip in blocks", "gw/a.csv.gz", gz(t, text), DecodeOptions{Parallelism: 2, ChunkBytes: 16 << 10}},
		} {
			f.opts.Target, f.opts.TimeColumn = target, "time"
			_, err := decode(t, f.key, f.data, f.opts)
			if fe := mustFileError(t, err); !strings.HasSuffix(fe.Error(), tc.want) {
				t.Errorf("value refused on row %d, row %d broken, %s: %v", tc.badValue, tc.broken, f.name, err)
			}
		}
	}
}
