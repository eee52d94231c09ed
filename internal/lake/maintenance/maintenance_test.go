package maintenance

import (
	"strings"
	"testing"
	"time"
)

// TestSettingsOf checks the resolution of the settings and where
// each value comes from: a property that parses, a default for one unset or
// unreadable.
func TestSettingsOf(t *testing.T) {
	s := SettingsOf(map[string]string{
		PropSnapshotRetention: "2h", PropMinSnapshots: "abc", PropTargetFileSize: "8MiB",
		PropDedupeWindow: "30d", PropAutoMaintain: "false", "write.metadata.previous-versions-max": "7",
	}, false)
	if s.Enabled || s.SnapshotRetention != 2*time.Hour || s.MinSnapshots != DefaultMinSnapshots ||
		s.TargetFileSize != 8<<20 || s.DedupeWindow != 30*24*time.Hour || s.MetadataVersions != 7 ||
		s.CompactMinFiles != DefaultCompactMinFiles || s.OrphanMinAge != DefaultOrphanMinAge {
		t.Errorf("settings %+v", s)
	}
	want := map[string]string{
		PropAutoMaintain: SourceProperty, PropSnapshotRetention: SourceProperty, PropMinSnapshots: SourceDefault, PropMaxSnapshots: SourceDefault,
		PropDedupeWindow: SourceProperty, PropTargetFileSize: SourceProperty, PropCompactMinFiles: SourceDefault,
		PropCompactColdAfter: SourceDefault, PropOrphanMinAge: SourceDefault,
		PropReadDedup: SourceDefault, PropRetention: SourceDefault,
		"write.metadata.previous-versions-max": SourceProperty,
	}
	if len(s.Sources) != len(want) {
		t.Errorf("sources %v, want %v", s.Sources, want)
	}
	for k, v := range want {
		if s.Sources[k] != v {
			t.Errorf("%s comes from %q, want %q", k, s.Sources[k], v)
		}
	}
	if d := SettingsOf(nil, false); d.Enabled || d.Sources[PropAutoMaintain] != SourceDefault || d.MetadataVersions != 100 {
		t.Errorf("no properties: %+v", d)
	}
}

// TestNoteSequence: an entry per 120th of cold-after at most, with the
// commit time given, the old ones dropped but the newest of them, and
// CommittedBy the first entry at or past a sequence number.
func TestNoteSequence(t *testing.T) {
	var st State
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	if st.NoteSequence(0, t0, t0, time.Hour) || st.NoteSequence(5, t0, t0, 0) {
		t.Fatal("recorded without a sequence number or cold-after")
	}
	// A commit every 15 s, a round 2 s after each.
	for i := range 1200 {
		at := t0.Add(time.Duration(i) * 15 * time.Second)
		st.NoteSequence(int64(i+1), at, at.Add(2*time.Second), time.Hour)
	}
	// One every 30 s over the last 2 hours, plus one older.
	if n := len(st.Sequences); n < 239 || n > 242 {
		t.Fatalf("%d entries", n)
	}
	last := st.Sequences[len(st.Sequences)-1]
	if st.NoteSequence(last.Seq, last.At.Add(time.Hour), last.At.Add(time.Hour), time.Hour) {
		t.Error("recorded an unchanged sequence number")
	}
	newest := t0.Add(1199 * 15 * time.Second)
	if d := newest.Sub(last.At); d < 0 || d >= 30*time.Second || last.At.Sub(t0)%(15*time.Second) != 0 {
		t.Errorf("newest entry at %v, want a commit time within 30 s of %v", last.At, newest)
	}
	if st.Sequences[1].At.After(newest.Add(2*time.Second - 2*time.Hour).Add(30 * time.Second)) {
		t.Errorf("second entry %v: more than two hours kept", st.Sequences[1].At)
	}
	at, ok := CommittedBy(st.Sequences, st.Sequences[3].Seq-1)
	if !ok || !at.Equal(st.Sequences[3].At) {
		t.Errorf("CommittedBy(%d) = %v, %v; want %v", st.Sequences[3].Seq-1, at, ok, st.Sequences[3].At)
	}
	if _, ok := CommittedBy(st.Sequences, last.Seq+1); ok {
		t.Error("CommittedBy a sequence number newer than every entry")
	}
	if _, ok := CommittedBy(st.Sequences, 0); ok {
		t.Error("CommittedBy sequence number 0 (format v1)")
	}
}

// TestRetentionProperty: timelake.retention takes a duration of an hour or
// more.
func TestRetentionProperty(t *testing.T) {
	for _, v := range []string{"400d", "2w", "36h"} {
		if known, err := ValidateProperty(PropRetention, v); !known || err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
	for _, v := range []string{"0", "10m", "x", "-1d"} {
		if _, err := ValidateProperty(PropRetention, v); err == nil || !strings.Contains(err.Error(), PropRetention) {
			t.Errorf("%s accepted: %v", v, err)
		}
	}
}
