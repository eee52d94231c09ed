package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/timelake/timelake/internal/alert"
	"github.com/timelake/timelake/internal/lake"
	"github.com/timelake/timelake/internal/landing"
)

// EventAudit is the alert event of an audit finding other than stuck files.
const EventAudit = "audit-finding"

// Alert sources: each keeps its own open conditions (AlertStateKey), so
// that one never ends a condition another opened.
const (
	SourcePoller = "poller" // ingest and serve
	SourceStatus = "status" // landing status
	SourceAudit  = "audit"  // landing audit
)

// AlertStateKey is the landing bucket key of the open alert conditions
// of table and landing prefix, for one source: below timelake's reserved
// prefix, which no listing for loading returns.
func AlertStateKey(source string, table lake.TableName, prefix string) string {
	name := table.String()
	if prefix != "" {
		sum := sha256.Sum256([]byte(prefix))
		name += "-" + hex.EncodeToString(sum[:4])
	}
	return landing.ReservedPrefix + "alerts/" + source + "/" + name + ".json"
}

// QuarantineAlert is the alert of files quarantined by one run or load.
func QuarantineAlert(table, landingURI string, files []alert.File) alert.Alert {
	return filesAlert(alert.EventQuarantine, table, landingURI, "quarantined", " (timelake landing rejected lists them)", files)
}

// FailedAlert is the alert of files one run or load could neither load
// nor quarantine (ingest.Failed): they stay in the landing bucket, and a
// later run tries again.
func FailedAlert(table, landingURI string, files []alert.File) alert.Alert {
	return filesAlert(alert.EventFailed, table, landingURI, "failed", " (they stay in the landing bucket; a later run tries again)", files)
}

// filesAlert names up to three of files and their reasons.
func filesAlert(event, table, landingURI, what, tail string, files []alert.File) alert.Alert {
	var b strings.Builder
	fmt.Fprintf(&b, "timelake %s: %d %s %s", table, len(files), plural(len(files), "file", "files"), what)
	for i, f := range files {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(files)-3)
			break
		}
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%s%s (%s)", sep, f.Key, strings.TrimPrefix(f.Reason, f.Key+": "))
	}
	b.WriteString(tail)
	return alert.Alert{Text: b.String(), Event: event, Severity: alert.SeverityWarning, Table: table,
		Landing: landingURI, Count: len(files), Files: files}
}

// RunFailedCondition is the condition of a failing ingest run or serve
// load (what: "ingest", "serve"), which ends with the next one that
// succeeds.
func RunFailedCondition(table, landingURI, what string, err error) alert.Condition {
	return alert.Condition{Key: alert.EventRunFailed + "/" + what,
		Alert: alert.Alert{Text: fmt.Sprintf("timelake %s: %s failed: %v", table, what, err), Event: alert.EventRunFailed,
			Severity: alert.SeverityError, Table: table, Landing: landingURI, Error: err.Error()},
		Resolved: fmt.Sprintf("timelake %s: %s loads again", table, what)}
}

// StatusConditions are the conditions a status shows: each silent
// gateway, and each gateway whose oldest waiting file waited longer than
// stuckAfter.
func StatusConditions(st *Status, stuckAfter time.Duration) []alert.Condition {
	var out []alert.Condition
	every := st.ExpectEvery()
	for _, g := range st.Gateways {
		if g.Silent {
			last := "never (in the dedupe window)"
			if g.LastLanded != nil {
				last = fmt.Sprintf("%s (%s ago)", g.LastLanded.UTC().Format(time.RFC3339), st.At.Sub(*g.LastLanded).Round(time.Second))
			}
			out = append(out, alert.Condition{Key: alert.EventSilent + "/" + g.Gateway,
				Alert: alert.Alert{Text: fmt.Sprintf("timelake %s: gateway %s is silent: last file landed %s, expected every %s",
					st.Table, gatewayName(g.Gateway), last, every), Event: alert.EventSilent, Severity: alert.SeverityWarning,
					Table: st.Table, Landing: st.Landing, Gateway: g.Gateway},
				Resolved: fmt.Sprintf("timelake %s: gateway %s lands files again", st.Table, gatewayName(g.Gateway))})
		}
		if g.OldestWaiting != nil && stuckAfter > 0 && st.At.Sub(*g.OldestWaiting) > stuckAfter {
			out = append(out, alert.Condition{Key: alert.EventStuck + "/" + g.Gateway,
				Alert: alert.Alert{Text: fmt.Sprintf("timelake %s: %d %s of gateway %s wait in the landing bucket, the oldest for %s (stuck after %s; timelake landing audit lists them)",
					st.Table, g.Waiting, plural(g.Waiting, "file", "files"), gatewayName(g.Gateway), st.At.Sub(*g.OldestWaiting).Round(time.Second), stuckAfter),
					Event: alert.EventStuck, Severity: alert.SeverityWarning, Table: st.Table, Landing: st.Landing,
					Gateway: g.Gateway, Count: g.Waiting},
				Resolved: fmt.Sprintf("timelake %s: no file of gateway %s waits longer than %s", st.Table, gatewayName(g.Gateway), stuckAfter)})
		}
	}
	return out
}

// StatusEvents are the events StatusConditions opens.
var StatusEvents = []string{alert.EventSilent, alert.EventStuck}

// AuditConditions are the findings of an audit that need attention, one
// condition each (stuck files as alert.EventStuck, the others EventAudit).
func AuditConditions(rep *AuditReport) []alert.Condition {
	var out []alert.Condition
	for _, f := range rep.Findings {
		if !f.Attention {
			continue
		}
		event := EventAudit
		if f.Kind == FindingStuck {
			event = alert.EventStuck
		}
		files := make([]alert.File, 0, len(f.Files))
		var keys []string
		for _, x := range f.Files {
			files = append(files, alert.File{Key: x.Key, Reason: x.Detail})
			if len(keys) < 3 {
				keys = append(keys, x.Key)
			}
		}
		more := ""
		if f.Count > len(keys) {
			more = fmt.Sprintf(" and %d more", f.Count-len(keys))
		}
		out = append(out, alert.Condition{Key: "audit/" + f.Kind,
			Alert: alert.Alert{Text: fmt.Sprintf("timelake %s: audit: %d %s %s: %s%s", rep.Table, f.Count, plural(f.Count, "file", "files"),
				f.Kind, strings.Join(keys, ", "), more), Event: event, Severity: alert.SeverityWarning, Table: rep.Table,
				Landing: rep.Landing, Count: f.Count, Files: files},
			Resolved: fmt.Sprintf("timelake %s: audit: no file %s any more", rep.Table, f.Kind)})
	}
	return out
}

// AuditEvents are the events AuditConditions opens.
var AuditEvents = []string{alert.EventStuck, EventAudit}

func gatewayName(gw string) string {
	if gw == "" {
		return "(files outside any folder)"
	}
	return gw
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
