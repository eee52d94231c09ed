package landing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/timelake/timelake/internal/storage"
)

// TestQuarantineNamesNeverClash: a landing file named like a report, a
// rejects file and a quarantined file of one name, and rejects files of
// two sources of one name are each kept under a name of their own, in
// either order and at the same time: no copy or report overwrites another.
func TestQuarantineNamesNeverClash(t *testing.T) {
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	forEachStore(t, func(t *testing.T, st storage.Store) {
		ctx := context.Background()

		// bodies reads every kept copy by the landing key its report names.
		bodies := func(t *testing.T, b *Bucket) map[string][]string {
			t.Helper()
			rows, err := b.Rejected(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string][]string{}
			for _, r := range rows {
				if r.Report == "" {
					t.Fatalf("%s has no report: %+v", r.QuarantinedTo, r)
				}
				out[r.Key] = append(out[r.Key], read(t, st, r.QuarantinedTo))
			}
			return out
		}

		t.Run("a file named like a report", func(t *testing.T) {
			for _, first := range []string{"gw1/a.csv.error.json", "gw1/a.csv"} {
				b := &Bucket{Store: st, QuarantinePrefix: "q-" + strings.ReplaceAll(first, "/", "-") + "/"}
				keys := []string{first, "gw1/a.csv"}
				if first == "gw1/a.csv" {
					keys[1] = "gw1/a.csv.error.json"
				}
				for _, k := range keys {
					put(t, st, k, "body of "+k)
					if _, err := b.Quarantine(ctx, k, Report{Reason: "bad " + k, At: at}); err != nil {
						t.Fatal(err)
					}
				}
				got := bodies(t, b)
				for _, k := range keys {
					if len(got[k]) != 1 || got[k][0] != "body of "+k {
						t.Fatalf("%s first: %s kept as %q, want its body once (all: %v)", first, k, got[k], got)
					}
				}
			}
		})

		t.Run("a rejects file and a quarantined file of one name", func(t *testing.T) {
			for i, setAsideFirst := range []bool{true, false, true, false} {
				b := &Bucket{Store: st, QuarantinePrefix: fmt.Sprintf("q-rejects-%d/", i)}
				put(t, st, "gw1/x.rejects.csv", "requeued rows, refused again")
				quarantine := func() error {
					_, err := b.Quarantine(ctx, "gw1/x.rejects.csv", Report{Reason: "bad", At: at})
					return err
				}
				setAside := func() error {
					_, err := b.SetAside(ctx, "gw1/x.rejects.csv", strings.NewReader("rows of x.csv"), 13,
						Report{Reason: "rows refused", At: at, Kind: KindRows, SourceKey: "gw1/x.csv", SourceSHA256: "aa"})
					return err
				}
				if i < 2 { // one after the other
					first, second := quarantine, setAside
					if setAsideFirst {
						first, second = setAside, quarantine
					}
					if err := first(); err != nil {
						t.Fatal(err)
					}
					if err := second(); err != nil {
						t.Fatal(err)
					}
				} else if err := together(quarantine, setAside); err != nil { // at once
					t.Fatal(err)
				}
				got := bodies(t, b)["gw1/x.rejects.csv"]
				if len(got) != 2 || !(got[0] == "rows of x.csv" && got[1] == "requeued rows, refused again" ||
					got[1] == "rows of x.csv" && got[0] == "requeued rows, refused again") {
					t.Fatalf("try %d: kept %q, want both files", i, got)
				}
			}
		})

		t.Run("rejects files of two sources of one name", func(t *testing.T) {
			b := &Bucket{Store: st, QuarantinePrefix: "q-sources/"}
			setAside := func(source, rows string) func() error {
				return func() error {
					_, err := b.SetAside(ctx, "gw1/x.rejects.csv", strings.NewReader(rows), int64(len(rows)),
						Report{Reason: "rows refused", At: at, Kind: KindRows, SourceKey: source, SourceSHA256: "sha of " + source})
					return err
				}
			}
			if err := together(setAside("gw1/x.csv", "PLAINBAD"), setAside("gw1/x.csv.gz", "GZBAD")); err != nil {
				t.Fatal(err)
			}
			got := bodies(t, b)["gw1/x.rejects.csv"]
			if len(got) != 2 || got[0] == got[1] {
				t.Fatalf("kept %q, want the rows of both sources", got)
			}
			// The same rows set aside again (a run that did not get to its
			// commit) are the same rejects file, whichever name it got.
			for _, source := range []string{"gw1/x.csv", "gw1/x.csv.gz"} {
				rows := map[string]string{"gw1/x.csv": "PLAINBAD", "gw1/x.csv.gz": "GZBAD"}[source]
				before := len(keysOf(t, st))
				if err := setAside(source, rows)(); err != nil {
					t.Fatal(err)
				}
				if n := len(keysOf(t, st)); n != before {
					t.Fatalf("setting the rows of %s aside again made %d objects, want %d", source, n, before)
				}
			}
			// Other rows of the same source (a setting changed before the
			// retry) are a rejects file of their own, not the earlier one.
			if err := setAside("gw1/x.csv", "PLAINBAD AND MORE")(); err != nil {
				t.Fatal(err)
			}
			got = bodies(t, b)["gw1/x.rejects.csv"]
			slices.Sort(got)
			if want := []string{"GZBAD", "PLAINBAD", "PLAINBAD AND MORE"}; !slices.Equal(got, want) {
				t.Fatalf("kept %q, want %q", got, want)
			}
		})

		t.Run("a quarantine stopped between its report and its copy", func(t *testing.T) {
			b := &Bucket{Store: st, QuarantinePrefix: "q-stopped/"}
			put(t, st, "gw1/s.csv", "bad rows")
			rep := Report{Reason: "bad", At: at, Key: "gw1/s.csv", Size: 8, SHA256: "s1"}
			if _, err := b.claim(ctx, b.QuarantineKey("gw1/s.csv"), rep, 0); err != nil { // the report, no copy
				t.Fatal(err)
			}
			dst, err := b.Quarantine(ctx, "gw1/s.csv", Report{Reason: "bad", At: at.Add(time.Minute), Size: 8, SHA256: "s1"})
			if err != nil || dst != "q-stopped/gw1/s.csv" {
				t.Fatalf("the same file quarantined again went to %q (%v), want the name its report claimed", dst, err)
			}
			// Another file of the key while that name's report is there
			// without its copy: a name of its own.
			if err := st.Delete(ctx, dst); err != nil {
				t.Fatal(err)
			}
			put(t, st, "gw1/s.csv", "other bad rows")
			if dst, err := b.Quarantine(ctx, "gw1/s.csv", Report{Reason: "bad", At: at.Add(2 * time.Minute), Size: 14, SHA256: "s2"}); err != nil || dst == "q-stopped/gw1/s.csv" {
				t.Fatalf("another file of the key went to %q (%v)", dst, err)
			}
		})

		t.Run("a rejects file whose report alone was written", func(t *testing.T) {
			b := &Bucket{Store: st, QuarantinePrefix: "q-crash/"}
			rep := Report{Reason: "rows refused", At: at, Kind: KindRows, SourceKey: "gw1/y.csv", SourceSHA256: "bb", Key: "gw1/y.rejects.csv", Size: 4}
			if _, err := b.claim(ctx, b.QuarantineKey("gw1/y.rejects.csv"), rep, 0); err != nil {
				t.Fatal(err)
			}
			name, err := b.SetAside(ctx, "gw1/y.rejects.csv", strings.NewReader("ROWS"), 4, rep)
			if err != nil {
				t.Fatal(err)
			}
			if got := read(t, st, name); got != "ROWS" {
				t.Fatalf("rejects file %s holds %q after a crash between its report and its rows", name, got)
			}
		})
	})
}

// together runs fns at once and returns the first error.
func together(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Go(func() { errs[i] = fn() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestRejectsKey: a rejects file's key drops its source's extension only
// when it is the rejects file's own, so two sources of one name and other
// types (a.csv, a.csv.gz) give two keys.
func TestRejectsKey(t *testing.T) {
	for _, c := range []struct{ key, ext, want string }{
		{"gw-7/a.csv", ".csv", "gw-7/a.rejects.csv"},
		{"gw-7/A.CSV", ".csv", "gw-7/A.rejects.csv"},
		{"gw-7/a.csv.gz", ".csv", "gw-7/a.csv.gz.rejects.csv"},
		{"gw-7/a.tsv", ".tsv", "gw-7/a.rejects.tsv"},
		{"gw-7/a.jsonl", ".jsonl", "gw-7/a.rejects.jsonl"},
		{"gw-7/a.json", ".jsonl", "gw-7/a.json.rejects.jsonl"},
		{"gw-7/a.parquet", ".parquet", "gw-7/a.rejects.parquet"},
		{"gw-7/readings", ".csv", "gw-7/readings.rejects.csv"},
	} {
		if got := RejectsKey(c.key, c.ext); got != c.want {
			t.Errorf("RejectsKey(%q, %q) = %q, want %q", c.key, c.ext, got, c.want)
		}
	}
}
