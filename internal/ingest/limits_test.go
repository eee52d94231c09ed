package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/ingest"
)

// TestFilesBeyondTheLimits: a gzip bomb (a header and one line of 512 MiB
// without a line end, in half a megabyte) and a row holding one value of
// 24 MiB (over a quarter of the memory budget) are quarantined naming the
// limit, before their text is held; the good file after them loads in the
// same run; the next run is clean. On a local folder and on S3.
func TestFilesBeyondTheLimits(t *testing.T) {
	var bomb bytes.Buffer
	zw, err := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write([]byte("time,device_id,temperature_c\n2026-01-05T10:00:00Z,d1,"))
	line := bytes.Repeat([]byte("9"), 1<<20)
	for range 512 {
		zw.Write(line)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 18<<20)
	rand.Read(value)
	huge := "time,device_id,temperature_c\n2026-01-05T10:00:00Z," + base64.StdEncoding.EncodeToString(value) + ",1.5\n"
	for name, open := range map[string]func(*testing.T) env{"local": localEnv, "s3": s3Env} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			e := open(t)
			e.put(t, "gw/a-bomb.csv.gz", bomb.Bytes())
			e.put(t, "gw/b-huge-value.csv", []byte(huge))
			e.put(t, "gw/c-good.csv", csvFile(readings(1, 0, 3), false, false))
			rep, err := ingest.Run(ctx, e.config())
			if err != nil || rep.Loaded != 1 || rep.Quarantined != 2 || rep.Rows != 3 {
				t.Fatalf("run: %+v, %v", rep.Files, err)
			}
			reasons := map[string]string{}
			for _, f := range rep.Files {
				reasons[f.Key] = f.Reason
			}
			if r := reasons["gw/a-bomb.csv.gz"]; !strings.Contains(r, "a gzip bomb") && !strings.Contains(r, "a row longer than 16 MiB") {
				t.Errorf("the bomb's reason: %q", r)
			}
			if r := reasons["gw/b-huge-value.csv"]; !strings.Contains(r, "line 2: a row longer than 16 MiB, the most one row may take (a quarter of --memory-budget)") {
				t.Errorf("the huge value's reason: %q", r)
			}
			rep, err = ingest.Run(ctx, e.config())
			if err != nil || len(rep.Files) != 0 {
				t.Fatalf("next run: %+v, %v", rep.Files, err)
			}
		})
	}
}

// TestAcceptLeavesOtherKeys: a run given Accept loads only the keys it
// takes, counts only those against MaxFiles, and leaves the others in the
// landing folder, unreported.
func TestAcceptLeavesOtherKeys(t *testing.T) {
	ctx := context.Background()
	e := localEnv(t)
	for _, k := range []string{"events/a.csv", "readings/a.csv", "readings/b.csv", "readings/c.csv"} {
		e.put(t, k, csvFile(readings(1, 0, 2), false, false))
	}
	c := e.config()
	c.Accept = func(key string) bool { return strings.HasPrefix(key, "readings/") }
	c.MaxFiles = 2
	rep, err := ingest.Run(ctx, c)
	if err != nil || rep.Loaded != 2 || len(rep.Files) != 2 || !rep.Remaining || rep.Files[0].Key != "readings/a.csv" {
		t.Fatalf("first run: %+v, %v", rep, err)
	}
	c.MaxFiles = 0
	if rep, err = ingest.Run(ctx, c); err != nil || rep.Loaded != 1 || rep.Remaining {
		t.Fatalf("second run: %+v, %v", rep, err)
	}
	if got := e.keys(t, ""); len(got) != 1 || got[0] != "events/a.csv" {
		t.Errorf("left in the landing folder: %v", got)
	}
}
