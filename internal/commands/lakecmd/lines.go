package lakecmd

import (
	"fmt"
	"strings"
	"time"

	"github.com/timelake/timelake/internal/ingest"
	"github.com/timelake/timelake/internal/iostreams"
	"github.com/timelake/timelake/internal/lake"
)

// FileLine is the one output line of a file.
func FileLine(r ingest.FileResult) string {
	switch r.Status {
	case ingest.Loaded:
		var notes []string
		switch {
		case r.ReplacedRows > 0:
			notes = append(notes, iostreams.Sprintf("%d replaced by a later row of the file with the same series key and time (timelake.read-dedup)", r.ReplacedRows))
		case r.DuplicateRows > 0:
			notes = append(notes, iostreams.Sprintf("%d repeat the series key and time of an earlier row, kept", r.DuplicateRows))
		}
		if r.RejectedRows > 0 {
			notes = append(notes, iostreams.Sprintf("%d refused, set aside -> %s", r.RejectedRows, r.RejectsTo))
		}
		rows := iostreams.Plural(r.Rows, "row")
		if len(notes) > 0 {
			rows += " (" + strings.Join(notes, "; ") + ")"
		}
		s := iostreams.Sprintf("%-15s %s  %s  snapshot %d", "loaded", r.Key, rows, r.SnapshotID)
		if r.Profile != "" {
			s += iostreams.Sprintf("; profile %s", r.Profile)
		}
		if len(r.SchemaChanges) > 0 {
			s += "; schema: " + strings.Join(r.SchemaChanges, ", ")
		}
		if r.Reason != "" {
			s += "; " + r.Reason
		}
		return s
	case ingest.AlreadyLoaded:
		if r.SnapshotID == 0 || r.SameAs != "" || r.Reason != "" {
			return iostreams.Sprintf("%-15s %s  %s", "already loaded", r.Key, r.Reason)
		}
		return iostreams.Sprintf("%-15s %s  snapshot %d, deleted", "already loaded", r.Key, r.SnapshotID)
	case ingest.Waiting:
		return iostreams.Sprintf("%-15s %s  %s", "waiting", r.Key, r.Reason)
	case ingest.Failed:
		return iostreams.Sprintf("%-15s %s  %s", "failed", r.Key, r.Reason)
	case ingest.Quarantined:
		return iostreams.Sprintf("%-15s %s  -> %s: %s", "quarantined", r.Key, r.QuarantinedTo, r.Reason)
	case ingest.WouldLoad:
		s := iostreams.Sprintf("%-15s %s  %d bytes", "would load", r.Key, r.Size)
		if r.Profile != "" {
			s += iostreams.Sprintf("; profile %s", r.Profile)
		}
		if r.Reason != "" {
			s += "; would be quarantined: " + r.Reason
		}
		return s
	}
	return iostreams.Sprintf("%-15s %s", r.Status, r.Key)
}

// MaintenanceLine says what the maintenance after the loading did, and
// what it left and why: the budget ran out, compaction skipped (delete
// files), groups left by its byte bound, nothing to compact, when orphan
// files are looked for next.
func MaintenanceLine(m *lake.MaintainReport) string {
	filesIn, bytesIn, filesOut, rowsReplaced := m.Compaction()
	partitions, rowsDropped := m.RetentionDropped()
	var parts []string
	if len(partitions) > 0 {
		parts = append(parts, iostreams.Sprintf("dropped %s older than timelake.retention (%s: %s)",
			iostreams.Plural(int64(len(partitions)), "partition"), iostreams.Plural(rowsDropped, "row"), strings.Join(partitions, ", ")))
	}
	if filesIn > 0 {
		c := iostreams.Sprintf("compacted %s (%s) into %d", iostreams.Plural(int64(filesIn), "file"), iostreams.HumanBytes(bytesIn), filesOut)
		if rowsReplaced > 0 {
			c += iostreams.Sprintf(" (%d rows replaced by a newer batch's, timelake.read-dedup)", rowsReplaced)
		}
		parts = append(parts, c)
	}
	if e := m.Expired; len(e.Expired) > 0 {
		parts = append(parts, iostreams.Sprintf("expired %s (%s into the load history, %s deleted)",
			iostreams.Plural(int64(len(e.Expired)), "snapshot"), iostreams.Plural(int64(e.Remembered), "key"), iostreams.Plural(int64(e.FilesDeleted), "file")))
	}
	if n := m.OrphansRemoved(); n > 0 {
		parts = append(parts, "removed "+iostreams.Plural(int64(n), "orphan file"))
	}
	deferred := m.Compacted.Deferred
	if len(parts) == 0 && deferred > 0 {
		parts = append(parts, "nothing done")
	} else if len(parts) == 0 {
		parts = append(parts, "nothing to do")
	}
	s := iostreams.Sprintf("%-15s %s in %.1fs", "maintenance", strings.Join(parts, ", "), m.Took.Seconds())
	if m.Pending {
		s += "; more next run (the budget ran out)"
	}
	switch {
	case m.Compacted.Skipped != "":
		s += "; compaction skipped: " + m.Compacted.Skipped
	case deferred > 0 && filesIn == 0:
		// Nothing rewritten, so no bound on bytes was spent: the groups'
		// rewrites would not end within any round of this budget.
		s += fmt.Sprintf("; compaction left %s whose rewrite would not end within the budget: timelake tables maintain with a longer --budget (or none) rewrites them", iostreams.Plural(int64(deferred), "group"))
	case deferred > 0:
		s += fmt.Sprintf("; compaction left %s for the next run (its bound on the bytes one round rewrites is spent, or their rewrite would not end within the budget)", iostreams.Plural(int64(deferred), "group"))
	case m.CompactionIdle() != "":
		s += "; nothing to compact: " + m.CompactionIdle()
	}
	if next, last := m.OrphansNotDue(); !next.IsZero() {
		s += "; orphan files looked for next at " + next.UTC().Format(time.RFC3339)
		if !last.IsZero() {
			s += " (last at " + last.UTC().Format(time.RFC3339) + ")"
		}
	}
	if m.Error != "" {
		s += "; stopped: " + m.Error + " (the loaded files are committed; see timelake tables maintain)"
	}
	return s
}

// CreatedText describes a table created by the run.
func CreatedText(c *ingest.Created) string {
	var b strings.Builder
	iostreams.Fprintf(&b, "created table %s at %s from %s\n", c.Table, c.Location, c.FromFile)
	iostreams.Fprintf(&b, "  time column %s, partition %s(%s)", c.TimeColumn, c.Partition, c.TimeColumn)
	if len(c.SeriesKey) > 0 {
		iostreams.Fprintf(&b, ", series key %s", strings.Join(c.SeriesKey, ","))
	}
	b.WriteString("\n")
	for _, col := range c.Columns {
		req := ""
		if col.Required {
			req = " not null"
		}
		iostreams.Fprintf(&b, "  %-20s %s%s\n", col.Name, col.Type, req)
	}
	return b.String()
}
