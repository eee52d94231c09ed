package envcheck

import (
	"github.com/timelake/timelake/internal/iostreams"
)

// writeReport prints the check report: one row per check (a table with a
// summary line on a terminal, tab-separated lines under a header in a
// pipe), or the --json document.
func writeReport(ios *iostreams.IOStreams, rep *Report, asJSON bool) error {
	if asJSON {
		return ios.PrintJSON(rep)
	}
	t := ios.NewTable(iostreams.Column{Header: "check"}, iostreams.Column{Header: "result"},
		iostreams.Column{Header: "detail", Wrap: 70}, iostreams.Column{Header: "fix", Wrap: 50})
	for _, ch := range rep.Checks {
		t.AddRow(ch.Name, string(ch.Result), ch.Detail, ch.Fix)
	}
	if err := t.Render(); err != nil {
		return err
	}
	if ios.IsStdoutTTY() {
		ok := len(rep.Checks) - rep.Failed - rep.Warnings - rep.Skipped
		verdict := "ready for cron"
		if rep.Failed > 0 {
			verdict = "fix the failed checks before cron runs ingest"
		}
		_, err := iostreams.Fprintf(ios.Out, "\n%d ok, %s, %d failed, %d skipped: %s\n",
			ok, plural(rep.Warnings, false, "warning", "warnings"), rep.Failed, rep.Skipped, verdict)
		return err
	}
	return nil
}
