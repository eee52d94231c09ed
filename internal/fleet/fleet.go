// Package fleet is the landing bucket and its table seen as a fleet of
// gateways, for the operator (docs/operations.md):
//
//   - Status: per gateway (the first folder of a landing key, or the first
//     Depth folders), the last file landed and loaded, the newest row time
//     loaded, the files waiting and the rejections of the last day, against
//     the cadence the table expects (timelake.expect-every), with the
//     gateways gone silent marked;
//   - Audit: the landing bucket and the quarantine compared with what the
//     table remembers (its snapshots, load history and outcome log): files
//     stuck waiting, keys loaded with other content, loaded files left
//     behind, quarantined files by reason, files a serve loaded by its
//     sweep (missed notifications), history segments gone;
//   - the Prometheus metrics of Status (Collector), for serve's /metrics
//     and for cron through a node_exporter textfile (WriteTextfile).
//
// Both stream the landing listing and the history (segment by segment, a
// batch of records at a time) and keep per-gateway figures and a bounded
// number of examples: memory does not grow with the keys of the bucket.
// Keys are looked up in the load history's index (lake.LoadHistory.Find).
package fleet

import (
	"strings"
	"time"
)

// GatewayOf names the gateway of a landing key: by default (depth <= 0)
// the folder that holds the file, "site-berlin/gw-7" of
// "site-berlin/gw-7/20260105T1000.csv" (timelake upload's key scheme,
// [prefix/]gateway/file); else its first depth folders, fewer when the
// key has fewer (layouts with folders of dates below the gateway's). ""
// for a key outside any folder.
func GatewayOf(key string, depth int) string {
	if depth <= 0 {
		if i := strings.LastIndexByte(key, '/'); i >= 0 {
			return key[:i]
		}
		return ""
	}
	end := 0
	for range depth {
		i := strings.IndexByte(key[end:], '/')
		if i < 0 {
			break
		}
		end += i + 1
	}
	return strings.TrimSuffix(key[:end], "/")
}

// SilentFactor is how many expected intervals without a file make a
// gateway silent: one expected file missed, whatever the jitter of its
// clock and uplink.
const SilentFactor = 2

// isSilent reports whether a gateway whose last file landed at last is
// silent at now for cadence every (0: no cadence, never silent).
func isSilent(last, now time.Time, every time.Duration) bool {
	return every > 0 && (last.IsZero() || now.Sub(last) > SilentFactor*every)
}

// later returns the later of a and b (zero counts as earliest).
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// timePtr is t as a JSON time in UTC, nil when zero.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
