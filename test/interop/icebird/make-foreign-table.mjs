#!/usr/bin/env node
// Writes an Iceberg table the way another tool would, sharing no code with
// iceberg-go or timelake: the data file with hyparquet-writer, the manifest
// and manifest list with the small Avro writer below (following the Iceberg
// v2 spec, codec null), and hand-made metadata JSON. The Go interop test
// (foreign_test.go) then has timelake append to it.
//
//   node make-foreign-table.mjs <table-dir> [--empty] [--timelake-format-version V]
//
// The table: format 2, unpartitioned, unsorted, field ids that differ from
// the ones timelake assigns (device_id=1, time=2, site=3, ...), an extra
// optional column `site`, no timelake.time-column (readers take the first
// timestamptz column) but an unknown `timelake.read-dedup` property, Snappy
// Parquet, microsecond times. v1.metadata.json is the empty table as created,
// v2.metadata.json has one append snapshot; metadata/version-hint.text says 2.
// With --empty only v1 is written (hint 1, no rows); --timelake-format-version
// sets that property (a newer major version must make timelake refuse the
// table). Prints {"location", "columns", "rows"} (rows in column order, times
// in microseconds as strings) on stdout.
import { mkdirSync, writeFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { randomBytes, randomUUID } from 'node:crypto'
import { parquetWriteBuffer } from 'hyparquet-writer'

const args = process.argv.slice(2)
const empty = args.includes('--empty')
const fvIdx = args.indexOf('--timelake-format-version')
const formatVersion = fvIdx >= 0 ? args[fvIdx + 1] : undefined
if (!args[0] || args[0].startsWith('--') || (fvIdx >= 0 && !formatVersion)) {
  throw new Error('usage: node make-foreign-table.mjs <table-dir> [--empty] [--timelake-format-version V]')
}
const dir = resolve(args[0])
const location = pathToFileURL(dir).href.replace(/\/+$/, '')
mkdirSync(join(dir, 'metadata'), { recursive: true })
mkdirSync(join(dir, 'data'), { recursive: true })

// ---- the rows -------------------------------------------------------------
const base = Date.UTC(2026, 0, 4, 0, 0, 0) * 1000 + 123456 // micros, sub-millisecond part
const rows = []
for (let i = 0; i < 12; i++) {
  rows.push({
    device_id: `dev-09-0${1 + (i % 2)}`,
    time: BigInt(base + i * 600_000_000 + i), // every 10 minutes, odd microseconds
    site: i % 3 === 0 ? null : 'north',
    temperature_c: 15 + i / 4,
    humidity_pct: i % 4 === 0 ? null : 40 + i,
    battery_v: 3.5 + i / 100,
  })
}

/** @type {{id: number, name: string, required: boolean, type: string}[]} */
const fields = [
  { id: 1, name: 'device_id', required: false, type: 'string' },
  { id: 2, name: 'time', required: true, type: 'timestamptz' },
  { id: 3, name: 'site', required: false, type: 'string' },
  { id: 4, name: 'temperature_c', required: false, type: 'double' },
  { id: 5, name: 'humidity_pct', required: false, type: 'double' },
  { id: 6, name: 'battery_v', required: false, type: 'double' },
]
const schema = { type: 'struct', 'schema-id': 0, 'identifier-field-ids': [], fields }

// ---- v1: the table as created ----------------------------------------------
const now = Date.UTC(2026, 0, 4, 12, 0, 0)
const v1 = {
  'format-version': 2,
  'table-uuid': randomUUID(),
  location,
  'last-sequence-number': 0,
  'last-updated-ms': now - 60_000,
  'last-column-id': 6,
  'current-schema-id': 0,
  schemas: [schema],
  'default-spec-id': 0,
  'partition-specs': [{ 'spec-id': 0, fields: [] }],
  'last-partition-id': 999,
  'default-sort-order-id': 0,
  'sort-orders': [{ 'order-id': 0, fields: [] }],
  properties: {
    'write.parquet.compression-codec': 'snappy',
    'created-by': 'timelake interop test (hyparquet-writer)',
    'timelake.read-dedup': 'true',
    ...(formatVersion ? { 'timelake.format-version': formatVersion } : {}),
  },
  'current-snapshot-id': -1,
  refs: {},
  snapshots: [],
  'snapshot-log': [],
  'metadata-log': [],
}
const v1Path = join(dir, 'metadata', 'v1.metadata.json')
writeFileSync(v1Path, JSON.stringify(v1, null, 2))
if (empty) {
  writeFileSync(join(dir, 'metadata', 'version-hint.text'), '1')
  process.stdout.write(JSON.stringify({ location, columns: fields, rows: [] }) + '\n')
  process.exit(0)
}

// ---- the data file (hyparquet-writer) -------------------------------------
const parquetType = {
  string: { type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } },
  timestamptz: { type: 'INT64', converted_type: 'TIMESTAMP_MICROS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' } },
  double: { type: 'DOUBLE' },
}
const parquetSchema = [
  { name: 'table', num_children: fields.length },
  ...fields.map(f => ({
    name: f.name,
    field_id: f.id,
    repetition_type: f.required ? 'REQUIRED' : 'OPTIONAL',
    ...parquetType[f.type],
  })),
]
const parquet = parquetWriteBuffer({
  columnData: fields.map(f => ({ name: f.name, data: rows.map(r => r[f.name]), nullable: !f.required })),
  schema: parquetSchema,
  codec: 'SNAPPY',
  kvMetadata: [{ key: 'iceberg.schema', value: JSON.stringify(schema) }],
  createdBy: 'timelake interop test (hyparquet-writer)',
})
const dataPath = join(dir, 'data', `00000-0-${randomUUID()}.parquet`)
writeFileSync(dataPath, new Uint8Array(parquet))
const dataSize = statSync(dataPath).size

// Iceberg single-value serialisation of the bounds.
const le64 = v => { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v)); return new Uint8Array(b) }
const f64 = v => { const b = Buffer.alloc(8); b.writeDoubleLE(v); return new Uint8Array(b) }
const enc = s => new TextEncoder().encode(s)
const serialise = { string: enc, timestamptz: le64, double: f64 }
const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0)
const valueCounts = []
const nullCounts = []
const lower = []
const upper = []
for (const f of fields) {
  const vals = rows.map(r => r[f.name]).filter(v => v !== null && v !== undefined)
  valueCounts.push({ key: f.id, value: BigInt(rows.length) })
  nullCounts.push({ key: f.id, value: BigInt(rows.length - vals.length) })
  if (vals.length) {
    const sorted = [...vals].sort(cmp)
    lower.push({ key: f.id, value: serialise[f.type](sorted[0]) })
    upper.push({ key: f.id, value: serialise[f.type](sorted[sorted.length - 1]) })
  }
}

// ---- a minimal Avro object container writer (codec null) ------------------
class AvroOut {
  constructor() { this.parts = [] }
  bytes(b) { this.parts.push(Buffer.from(b)) }
  long(n) {
    let z = BigInt.asUintN(64, (BigInt(n) << 1n) ^ (BigInt(n) >> 63n))
    const out = []
    do {
      let byte = Number(z & 0x7fn)
      z >>= 7n
      if (z) byte |= 0x80
      out.push(byte)
    } while (z)
    this.bytes(out)
  }
  str(s) { const b = enc(s); this.long(b.length); this.bytes(b) }
  bin(b) { this.long(b.length); this.bytes(b) }
  buffer() { return Buffer.concat(this.parts) }
}

function writeValue(out, type, value) {
  if (Array.isArray(type)) { // union: null or the other branch
    const idx = value === null || value === undefined ? type.indexOf('null') : type.findIndex(t => t !== 'null')
    out.long(idx)
    return writeValue(out, type[idx], value)
  }
  const t = typeof type === 'string' ? type : type.type
  switch (t) {
    case 'null': return
    case 'boolean': return out.bytes([value ? 1 : 0])
    case 'int': case 'long': return out.long(value)
    case 'double': { const b = Buffer.alloc(8); b.writeDoubleLE(value); return out.bytes(b) }
    case 'string': return out.str(value)
    case 'bytes': return out.bin(value)
    case 'record':
      for (const f of type.fields) writeValue(out, f.type, value[f.name])
      return
    case 'array':
      if (value.length) {
        out.long(value.length)
        for (const v of value) writeValue(out, type.items, v)
      }
      return out.long(0)
  }
  throw new Error(`avro writer: unsupported type ${JSON.stringify(type)}`)
}

function avroFile(path, avroSchema, meta, records) {
  const out = new AvroOut()
  out.bytes([0x4f, 0x62, 0x6a, 0x01]) // "Obj" 1
  const entries = Object.entries({ 'avro.schema': JSON.stringify(avroSchema), 'avro.codec': 'null', ...meta })
  out.long(entries.length)
  for (const [k, v] of entries) { out.str(k); out.bin(enc(v)) }
  out.long(0)
  const sync = randomBytes(16)
  out.bytes(sync)
  const block = new AvroOut()
  for (const r of records) writeValue(block, avroSchema, r)
  const data = block.buffer()
  out.long(records.length)
  out.long(data.length)
  out.bytes(data)
  out.bytes(sync)
  writeFileSync(path, out.buffer())
  return statSync(path).size
}

const map = (name, kid, vid, vtype) => ['null', {
  type: 'array', logicalType: 'map',
  items: { type: 'record', name, fields: [{ name: 'key', type: 'int', 'field-id': kid }, { name: 'value', type: vtype, 'field-id': vid }] },
}]
const manifestEntrySchema = {
  type: 'record', name: 'manifest_entry', fields: [
    { name: 'status', type: 'int', 'field-id': 0 },
    { name: 'snapshot_id', type: ['null', 'long'], 'field-id': 1 },
    { name: 'sequence_number', type: ['null', 'long'], 'field-id': 3 },
    { name: 'file_sequence_number', type: ['null', 'long'], 'field-id': 4 },
    { name: 'data_file', 'field-id': 2, type: { type: 'record', name: 'r2', fields: [
      { name: 'content', type: 'int', 'field-id': 134 },
      { name: 'file_path', type: 'string', 'field-id': 100 },
      { name: 'file_format', type: 'string', 'field-id': 101 },
      { name: 'partition', 'field-id': 102, type: { type: 'record', name: 'r102', fields: [] } },
      { name: 'record_count', type: 'long', 'field-id': 103 },
      { name: 'file_size_in_bytes', type: 'long', 'field-id': 104 },
      { name: 'column_sizes', type: map('k117_v118', 117, 118, 'long'), 'field-id': 108 },
      { name: 'value_counts', type: map('k119_v120', 119, 120, 'long'), 'field-id': 109 },
      { name: 'null_value_counts', type: map('k121_v122', 121, 122, 'long'), 'field-id': 110 },
      { name: 'nan_value_counts', type: map('k138_v139', 138, 139, 'long'), 'field-id': 137 },
      { name: 'lower_bounds', type: map('k126_v127', 126, 127, 'bytes'), 'field-id': 125 },
      { name: 'upper_bounds', type: map('k129_v130', 129, 130, 'bytes'), 'field-id': 128 },
      { name: 'key_metadata', type: ['null', 'bytes'], 'field-id': 131 },
      { name: 'split_offsets', type: ['null', { type: 'array', items: 'long', 'element-id': 133 }], 'field-id': 132 },
      { name: 'equality_ids', type: ['null', { type: 'array', items: 'int', 'element-id': 136 }], 'field-id': 135 },
      { name: 'sort_order_id', type: ['null', 'int'], 'field-id': 140 },
    ] } },
  ],
}
const manifestFileSchema = {
  type: 'record', name: 'manifest_file', fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500 },
    { name: 'manifest_length', type: 'long', 'field-id': 501 },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502 },
    { name: 'content', type: 'int', 'field-id': 517 },
    { name: 'sequence_number', type: 'long', 'field-id': 515 },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516 },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503 },
    { name: 'added_files_count', type: 'int', 'field-id': 504 },
    { name: 'existing_files_count', type: 'int', 'field-id': 505 },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506 },
    { name: 'added_rows_count', type: 'long', 'field-id': 512 },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513 },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514 },
    { name: 'partitions', 'field-id': 507, type: ['null', { type: 'array', 'element-id': 508, items: { type: 'record', name: 'r508', fields: [
      { name: 'contains_null', type: 'boolean', 'field-id': 509 },
      { name: 'contains_nan', type: ['null', 'boolean'], 'field-id': 518 },
      { name: 'lower_bound', type: ['null', 'bytes'], 'field-id': 510 },
      { name: 'upper_bound', type: ['null', 'bytes'], 'field-id': 511 },
    ] } }] },
    { name: 'key_metadata', type: ['null', 'bytes'], 'field-id': 519 },
  ],
}

// Below 2^53: snapshot ids survive JSON.parse in JavaScript readers.
const snapshotId = 4_242_424_242_424_242

const manifestPath = join(dir, 'metadata', `${randomUUID()}-m0.avro`)
const manifestLength = avroFile(manifestPath, manifestEntrySchema, {
  schema: JSON.stringify(schema),
  'schema-id': '0',
  'partition-spec': '[]',
  'partition-spec-id': '0',
  'format-version': '2',
  content: 'data',
}, [{
  status: 1, // ADDED: sequence numbers are inherited from the manifest list
  snapshot_id: BigInt(snapshotId),
  sequence_number: null,
  file_sequence_number: null,
  data_file: {
    content: 0,
    file_path: pathToFileURL(dataPath).href,
    file_format: 'PARQUET',
    partition: {},
    record_count: BigInt(rows.length),
    file_size_in_bytes: BigInt(dataSize),
    column_sizes: null,
    value_counts: valueCounts,
    null_value_counts: nullCounts,
    nan_value_counts: null,
    lower_bounds: lower,
    upper_bounds: upper,
    key_metadata: null,
    split_offsets: null,
    equality_ids: null,
    sort_order_id: null,
  },
}])

const listPath = join(dir, 'metadata', `snap-${snapshotId}-1-${randomUUID()}.avro`)
avroFile(listPath, manifestFileSchema, {
  'format-version': '2',
  'snapshot-id': String(snapshotId),
  'parent-snapshot-id': 'null',
  'sequence-number': '1',
}, [{
  manifest_path: pathToFileURL(manifestPath).href,
  manifest_length: BigInt(manifestLength),
  partition_spec_id: 0,
  content: 0,
  sequence_number: 1n,
  min_sequence_number: 1n,
  added_snapshot_id: BigInt(snapshotId),
  added_files_count: 1,
  existing_files_count: 0,
  deleted_files_count: 0,
  added_rows_count: BigInt(rows.length),
  existing_rows_count: 0n,
  deleted_rows_count: 0n,
  partitions: [],
  key_metadata: null,
}])


// ---- v2: one append ----------------------------------------------------------
const v2 = {
  ...v1,
  'last-sequence-number': 1,
  'last-updated-ms': now,
  'current-snapshot-id': snapshotId,
  refs: { main: { 'snapshot-id': snapshotId, type: 'branch' } },
  snapshots: [{
    'snapshot-id': snapshotId,
    'sequence-number': 1,
    'timestamp-ms': now,
    'manifest-list': pathToFileURL(listPath).href,
    summary: {
      operation: 'append',
      'added-data-files': '1',
      'added-records': String(rows.length),
      'added-files-size': String(dataSize),
      'total-data-files': '1',
      'total-records': String(rows.length),
      'total-files-size': String(dataSize),
      'total-delete-files': '0',
      'total-position-deletes': '0',
      'total-equality-deletes': '0',
    },
    'schema-id': 0,
  }],
  'snapshot-log': [{ 'snapshot-id': snapshotId, 'timestamp-ms': now }],
  'metadata-log': [{ 'metadata-file': pathToFileURL(v1Path).href, 'timestamp-ms': now - 60_000 }],
}
writeFileSync(join(dir, 'metadata', 'v2.metadata.json'), JSON.stringify(v2, null, 2))
writeFileSync(join(dir, 'metadata', 'version-hint.text'), '2')

const out = rows.map(r => fields.map(f => {
  const v = r[f.name]
  return typeof v === 'bigint' ? v.toString() : v
}))
process.stdout.write(JSON.stringify({ location, columns: fields, rows: out }) + '\n')
