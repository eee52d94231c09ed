#!/usr/bin/env node
// Reads one Iceberg table with icebird (a pure-JavaScript Iceberg reader that
// shares no code with iceberg-go: its own Avro decoder for manifests, hyparquet
// for Parquet) and prints one JSON document on stdout. Used by the Go interop
// tests in test/interop (interop_test.go, foreign_test.go), which compare it with the source rows.
//
//   node read-table.mjs <table-url> [<metadata-file>]
//
// <table-url> is the table location: file:///abs/path/ns/table, or
// s3://bucket/prefix/ns/table. <metadata-file> is the name of the metadata
// file to read (vN.metadata.json, as a REST catalog or `timelake tables
// show` names it); without it icebird reads metadata/version-hint.text. icebird only speaks HTTP(S) and maps s3:// to
// AWS hosts, so globalThis.fetch is replaced before icebird is loaded:
//   - file:// URLs are read from disk (Range requests answered with 206);
//   - https://<bucket>.s3.amazonaws.com/<key> (icebird's rewrite of s3://) goes
//     to $TIMELAKE_ICEBIRD_S3_PROXY/<bucket>/<key>, a plain HTTP server that the
//     Go test runs in front of the local S3 server (it signs the requests);
//   - anything else is refused: the tests never leave the machine.
//
// Output: metadata file used (icebird reads metadata/version-hint.text first),
// schema, the data files as icebird's manifest reader sees them (record
// counts, partition values, lower/upper bounds as hex), and every row as an
// array in schema order. Values: timestamps as epoch milliseconds (icebird
// returns JavaScript Dates), longs as decimal strings, binary as hex, doubles
// as JSON numbers (non-finite ones as strings), null for null.
import { open, stat } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { register } from 'node:module'

// See avro-inflate-hook.mjs: icebird's Avro `deflate` decoder cannot read
// DEFLATE stored blocks, which Go's compress/flate writes into manifests; the
// hook swaps it for Node's zlib.inflateRawSync. Must run before icebird loads.
register('./avro-inflate-hook.mjs', import.meta.url)

const realFetch = globalThis.fetch
const s3Proxy = process.env.TIMELAKE_ICEBIRD_S3_PROXY?.replace(/\/+$/, '')
const fetched = []

/**
 * Serves a file:// URL from disk, honouring a single Range header.
 * @param {URL} url
 * @param {RequestInit} [init]
 * @returns {Promise<Response>}
 */
async function fetchFile(url, init) {
  const path = fileURLToPath(url)
  let size
  try {
    size = (await stat(path)).size
  } catch (err) {
    if (err.code === 'ENOENT') return new Response('not found', { status: 404, statusText: 'Not Found' })
    throw err
  }
  const method = (init?.method ?? 'GET').toUpperCase()
  if (method === 'HEAD') {
    return new Response(null, { status: 200, headers: { 'content-length': String(size) } })
  }
  const range = new Headers(init?.headers).get('range')
  let start = 0
  let end = size // exclusive
  let status = 200
  if (range) {
    const m = /^bytes=(\d+)-(\d*)$/.exec(range)
    if (!m) return new Response('bad range', { status: 416 })
    start = Number(m[1])
    end = m[2] === '' ? size : Math.min(size, Number(m[2]) + 1)
    status = 206
  }
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.alloc(Math.max(0, end - start))
    let off = 0
    while (off < buf.length) {
      const { bytesRead } = await fh.read(buf, off, buf.length - off, start + off)
      if (bytesRead === 0) break
      off += bytesRead
    }
    const headers = { 'content-length': String(off) }
    if (status === 206) headers['content-range'] = `bytes ${start}-${start + off - 1}/${size}`
    return new Response(buf.subarray(0, off), { status, headers })
  } finally {
    await fh.close()
  }
}

globalThis.fetch = async (input, init) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
  fetched.push(url)
  if (url.startsWith('file:')) return fetchFile(new URL(url), init)
  const s3 = /^https:\/\/([a-z0-9.-]+)\.s3\.amazonaws\.com\/(.*)$/.exec(url)
  if (s3) {
    if (!s3Proxy) throw new Error(`harness: ${url} is on S3 but TIMELAKE_ICEBIRD_S3_PROXY is not set`)
    return realFetch(`${s3Proxy}/${s3[1]}/${s3[2]}`, init)
  }
  throw new Error(`harness: refusing to fetch ${url} (only file:// and the local S3 proxy)`)
}

const { icebergLatestVersion, icebergMetadata, icebergManifests, icebergRead } = await import('icebird')

/**
 * @param {any} v a value as icebird returns it
 * @returns {any} its JSON form (see the header comment)
 */
function jsonValue(v) {
  if (v === undefined || v === null) return null
  if (v instanceof Date) return v.getTime()
  if (typeof v === 'bigint') return v.toString()
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex')
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v)
  if (Array.isArray(v)) return v.map(jsonValue)
  if (typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonValue(x)]))
  return v
}

/**
 * Iceberg stores manifest maps (lower_bounds, value_counts, ...) as arrays of
 * {key, value}; icebird returns them as such.
 * @param {{key: number, value: any}[] | undefined} kvs
 * @returns {Record<string, any>}
 */
function mapOf(kvs) {
  const out = {}
  for (const { key, value } of kvs ?? []) out[String(key)] = jsonValue(value)
  return out
}

async function main() {
  const tableUrl = process.argv[2]?.replace(/\/+$/, '')
  if (!tableUrl) throw new Error('usage: node read-table.mjs <table-url> [<metadata-file>]')

  const metadataFile = process.argv[3] ?? `${await icebergLatestVersion({ tableUrl })}.metadata.json`
  const metadata = await icebergMetadata({ tableUrl, metadataFileName: metadataFile })
  const schema = metadata.schemas.find(s => s['schema-id'] === metadata['current-schema-id'])
  if (!schema) throw new Error('current schema not in metadata')

  const snapshotId = metadata['current-snapshot-id']
  const hasSnapshot = snapshotId !== undefined && snapshotId !== null && snapshotId !== -1
  let files = []
  let rows = []
  if (hasSnapshot) {
    const manifests = await icebergManifests(metadata)
    for (const { url, entries } of manifests) {
      for (const e of entries) {
        if (e.status === 2) continue // deleted
        const df = e.data_file
        files.push({
          manifest: url,
          status: e.status,
          content: df.content ?? 0,
          path: df.file_path,
          format: df.file_format,
          record_count: Number(df.record_count),
          file_size_in_bytes: Number(df.file_size_in_bytes),
          partition: jsonValue(df.partition ?? {}),
          value_counts: mapOf(df.value_counts),
          null_value_counts: mapOf(df.null_value_counts),
          lower_bounds: mapOf(df.lower_bounds),
          upper_bounds: mapOf(df.upper_bounds),
        })
      }
    }
    // A snapshot may add no data file (timelake records a landing file
    // without rows that way): the table is then empty, but icebergRead
    // refuses a snapshot without data manifests.
    if (files.length > 0) {
      const read = await icebergRead({ tableUrl, metadata })
      rows = read.map(r => schema.fields.map(f => jsonValue(r[f.name])))
    }
  }
  const inflate = globalThis.__timelakeAvroInflate ?? { blocks: 0, stockFailures: 0, stockMismatches: 0 }
  const doc = {
    table_url: tableUrl,
    metadata_file: metadataFile,
    format_version: metadata['format-version'],
    location: metadata.location,
    // Snapshot ids are int64 and lose precision in JSON.parse: only say whether there is one.
    has_snapshot: hasSnapshot,
    properties: metadata.properties ?? {},
    columns: schema.fields.map(f => ({ id: f.id, name: f.name, type: f.type, required: f.required })),
    files,
    row_count: rows.length,
    rows,
    avro_deflate: inflate,
    fetches: fetched.length,
  }
  process.stdout.write(JSON.stringify(doc) + '\n')
}

main().catch(err => {
  process.stderr.write(`read-table: ${err?.stack ?? err}\n`)
  process.exit(1)
})
