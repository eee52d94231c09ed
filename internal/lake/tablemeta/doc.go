// Package tablemeta owns one version of a table's metadata
// (vN.metadata.json, Iceberg spec "Table Metadata") as the lake reads and
// writes it, and the change that turns one version into the next:
//
//   - Indexed: a version indexed for the ingest path (Parse, Index,
//     FromMetadata): its top-level fields as JSON, an index of its
//     snapshots (SnapRef: id, parent, batch id, content hash, where each
//     one's JSON is), the batch ids and content hashes of the current
//     snapshot's ancestry, and the metadata without history that data
//     files are written with (Write, DataWrite). Its next version is
//     spliced into its JSON (WithSnapshots, WithSchema, the edits of
//     Apply: remove-snapshots, a rollback of the main branch, properties)
//     instead of rebuilt and re-encoded from the whole history, so that
//     the time and memory of a commit stay nearly independent of the
//     table's age (docs/performance.md).
//   - Change: the Iceberg table updates and requirements of one commit
//     (Iceberg REST spec, "TableUpdate" and "TableRequirement"), one
//     constructor per kind of mutation (AddSnapshots, RemoveSnapshots,
//     RollBack, ChangeProperties), with what a REST catalog is sent
//     (Updates, Requirements), what the file catalog writes (Indexed.Apply)
//     and whether a newer version holds it (HeldBy).
//
// It is separate from internal/lake because none of it needs a table
// handle, the object store or a catalog: it takes and returns bytes and
// iceberg-go values, and is tested without a table. The catalogs that
// read and keep the versions are internal/lake/catalog's; the commit
// protocol (commit.go), the mutations that build a Change and the
// snapshot producer that writes its manifests (producer.go) stay in
// internal/lake; how a version is indexed and spliced, and how a change
// is stated as Iceberg updates, is changed here.
package tablemeta
