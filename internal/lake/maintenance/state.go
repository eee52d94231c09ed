package maintenance

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/timelake/timelake/internal/lake/tablemeta"
)

// StateName is a small object next to the table's metadata (in the folder
// of timelake's own files) that remembers when orphan files were last
// looked for, and when the table reached which sequence number
// (State.Sequences). It is advisory: when lost or overwritten by a
// concurrent round, orphans are looked for early and a partition goes cold
// a little late; nothing else depends on it.
const StateName = "_timelake-maintenance.json"

// State is the maintenance state of a table, the JSON of its StateName
// object.
type State struct {
	OrphansCheckedAt time.Time `json:"orphans_checked_at"`
	// Sequences are the table's last-sequence-number as seen at a time,
	// oldest first: a data file whose data sequence number is at most Seq
	// was committed before At. They tell how old a file is once the
	// snapshot that added it has expired (Iceberg spec, "Sequence
	// Numbers": a file's data sequence number is its snapshot's), which
	// compaction needs to see a partition go cold when snapshots are kept
	// for less than timelake.compact-cold-after.
	Sequences []SequenceTime `json:"sequences,omitempty"`
	// RewriteRate is the rows per second the table's rewrites have taken
	// (NoteRewriteRate), for the estimate of the next ones; 0 until one
	// was measured.
	RewriteRate float64 `json:"rewrite_rows_per_second,omitempty"`
	// OrphansSeconds is how long the last orphan file check took, so that
	// a round with less time left does not start one.
	OrphansSeconds float64 `json:"orphans_seconds,omitempty"`
	// OrphansPostponed counts the rounds in a row in which orphan removal
	// was due and the budget ran out before it: from OrphansTurn on, a
	// round removes orphans before anything else.
	OrphansPostponed int `json:"orphans_postponed,omitempty"`
}

// OrphansTurn is how many rounds orphan removal may be postponed by the
// other steps of a backlog before it goes first: the files a cut round
// left behind are deleted within a few rounds, however long the backlog.
const OrphansTurn = 2

// DecodeState reads the JSON of a StateName object; an unreadable one is
// an empty state (it is advisory).
func DecodeState(b []byte) State {
	var st State
	if json.Unmarshal(b, &st) != nil {
		return State{}
	}
	return st
}

// Encode returns the JSON of the StateName object that holds st.
func (st State) Encode() ([]byte, error) { return json.Marshal(st) }

// OrphansDue reports whether orphan files were last looked for more than
// OrphanCheckInterval before now (or never), or force asks for them.
func (st State) OrphansDue(now time.Time, force bool) bool {
	return force || !now.Before(st.OrphansCheckedAt.Add(OrphanCheckInterval))
}

// NoteRewriteRate adds a measured rewrite rate (rows per second) to the
// estimate: the mean of it and the estimate before, so that one slow
// round on a busy machine moves it half way.
func (st *State) NoteRewriteRate(rate float64) {
	if st.RewriteRate <= 0 {
		st.RewriteRate = rate
		return
	}
	st.RewriteRate = (st.RewriteRate + rate) / 2
}

// SequenceTime is one entry of State.Sequences.
type SequenceTime struct {
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
}

// NoteSequence records that the table had reached sequence number seq by
// at (the commit time of the snapshot that took it there), when seq
// advanced and the newest entry is older than a 120th of coldAfter (30 s
// for the default hour: every run of a poller started each minute notes
// its commits, so a file's commit time is known to the run), and drops
// entries no longer needed: those older than twice coldAfter but the newest
// of them. It reports whether the state changed.
func (st *State) NoteSequence(seq int64, at, now time.Time, coldAfter time.Duration) bool {
	if seq <= 0 || coldAfter <= 0 {
		return false
	}
	if n := len(st.Sequences); n > 0 && (st.Sequences[n-1].Seq >= seq || at.Sub(st.Sequences[n-1].At) < coldAfter/120) {
		return false
	}
	st.Sequences = append(st.Sequences, SequenceTime{Seq: seq, At: at.UTC()})
	cut := 0
	for cut+1 < len(st.Sequences) && st.Sequences[cut+1].At.Before(now.Add(-2*coldAfter)) {
		cut++
	}
	st.Sequences = slices.Clone(st.Sequences[cut:])
	return true
}

// NewestCommit is the commit time of h's newest snapshot (the one that
// took the table to its last sequence number), or now without snapshots.
func NewestCommit(h *tablemeta.Indexed, now time.Time) time.Time {
	var ms int64
	for _, r := range h.Snaps() {
		ms = max(ms, r.Timestamp)
	}
	if ms == 0 {
		return now
	}
	return time.UnixMilli(ms)
}

// CommittedBy returns the time by which a data file with data sequence
// number seq was committed, from the recorded sequences; ok is false when
// none tells (seq unknown, or newer than every entry).
func CommittedBy(seqs []SequenceTime, seq int64) (at time.Time, ok bool) {
	if seq <= 0 {
		return time.Time{}, false
	}
	for _, s := range seqs {
		if s.Seq >= seq {
			return s.At, true
		}
	}
	return time.Time{}, false
}
