// Package maintenance owns what a round of table maintenance decides
// without a table (docs/maintenance.md):
//
//   - the settings: the table properties of maintenance, compaction,
//     the load history's window and orphan removal, their defaults, what
//     each accepts and its validation (Properties, ValidateProperty), a
//     table's resolved settings and where each comes from (Settings,
//     SettingsOf), the properties an older table of timelake's is given
//     (UpgradeProperties): settings.go;
//   - compaction's settings and rules: the size tiers, when a partition
//     is cold (CompactSettings, SizeTier, ColdSlack) and the estimate of
//     a rewrite's time the budget is spent by (RewriteEstimate):
//     compact.go;
//   - which files are compacted together: the groups of each partition,
//     newest first, within the round's bytes and time (PlanCompaction,
//     PackGroups, FittingPart, IdleReason; Group, which is
//     lake.CompactionGroup), and the files the merge reads whole or
//     streams (SplitMergeInputs): plan.go;
//   - the groups of a table under timelake.read-dedup: closed groups of
//     a live partition, and a cold partition's files whose bounds say
//     they may share keys (DedupePlan, SharingComponents, ClosedGroup,
//     BoundComparator): dedupe.go;
//   - which snapshots an expiry removes (ChooseExpired, ExpiredSnapshot)
//     and whether the files they leave can be found from the oldest kept
//     snapshot alone (LinearTail): expire.go;
//   - the maintenance state, the advisory object next to a table's
//     metadata, and its JSON format (State, StateName: when orphans were
//     last looked for, the sequence numbers over time that date a file
//     whose snapshot expired, the measured rewrite rate; NoteSequence,
//     CommittedBy, NewestCommit): state.go;
//   - what retention drops: the end of a data file's time partition
//     (PartitionEnd): retention.go;
//   - the one report of a round, which every output renders (Report,
//     which is lake.MaintainReport: its sums and its JSON), and the
//     results of its steps (CompactResult, ExpireResult, RetentionResult,
//     OrphanResult): report.go.
//
// It is separate from internal/lake because none of it needs a table
// handle, the object store or the commit protocol: it takes properties,
// metadata versions (lake/tablemeta) and plain values, and is tested
// without a table. Executing the decisions stays in internal/lake: the
// Table methods (Compact, Expire, RemoveOrphans, ApplyRetention,
// Maintain), the mutations that commit them through the commit protocol
// (rewriteMutation, expireMutation, retentionMutation), the merge of a
// group's files (merge.go), reading and writing the state object through
// the store, and lake's public names of the settings
// (lake.MaintenanceSettings, lake.ValidateProperty, lake.Prop*,
// lake.Default*: maintain.go).
package maintenance
