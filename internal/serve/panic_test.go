package serve_test

import (
	"strings"
	"testing"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/testutil/wait"
)

// TestServeSurvivesAPanickingFile: a panic while serve's session decodes
// or writes one file quarantines that file; the server keeps running and
// loads the files announced with it and after it.
func TestServeSurvivesAPanickingFile(t *testing.T) {
	for _, stage := range []string{"decode", "write"} {
		t.Run(stage, func(t *testing.T) {
			const poison = "gw/b.csv"
			dir, _, r := serveLocal(t, func(c *ingest.Config) {
				c.SettleTime, c.OpenEndSettleTime = -1, -1
				c.FaultHook = func(s, key string) {
					if s == stage && key == poison {
						var m map[string]int
						m[key]++ // a nil map: the kind of bug a reader has
					}
				}
			})
			for i, k := range []string{"gw/a.csv", poison, "gw/c.csv"} {
				land(t, r, dir, k, csv(i, 4))
			}
			for _, k := range []string{"gw/a.csv", poison, "gw/c.csv"} {
				wait.For(t, k+" settled", func() bool { return len(r.resultsOf(k)) > 0 })
			}
			if res := r.resultsOf(poison); res[0].Status != ingest.Quarantined ||
				!strings.Contains(res[0].Reason, "crashed while") || strings.Contains(res[0].Reason, "goroutine") {
				t.Fatalf("%s: %+v", poison, res)
			}
			for _, k := range []string{"gw/a.csv", "gw/c.csv"} {
				if res := r.resultsOf(k); res[0].Status != ingest.Loaded || res[0].Rows != 4 {
					t.Fatalf("%s: %+v", k, res)
				}
			}

			// The server still runs: a later file loads.
			if code, _ := health(r); code != 200 {
				t.Fatalf("healthz %d after the panic", code)
			}
			land(t, r, dir, "gw/d.csv", csv(3, 4))
			wait.For(t, "gw/d.csv loaded", func() bool {
				res := r.resultsOf("gw/d.csv")
				return len(res) > 0 && res[0].Status == ingest.Loaded
			})
			if err := r.stop(); err != nil {
				t.Fatalf("serve ended with %v", err)
			}
		})
	}
}
