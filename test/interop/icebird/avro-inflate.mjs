// The `gunzip` that icebird's Avro reader gets instead of hyparquet-compressors'
// own (avro-inflate-hook.mjs says why). Avro's `deflate` codec is raw DEFLATE
// (RFC 1951, no zlib or gzip header): exactly what zlib.inflateRawSync decodes,
// stored blocks included.
//
// Each block is also given to the stock decoder (the copy icebird would have
// imported, passed in the `stock` query parameter by the hook), and its
// failures are counted: the harness prints the count, so it shows whether
// the workaround is still needed with a newer icebird.
import { inflateRawSync } from 'node:zlib'

const stockURL = new URL(import.meta.url).searchParams.get('stock')
const stock = stockURL ? await import(stockURL) : undefined

/** Counters read by read-table.mjs. */
export const stats = { blocks: 0, stockFailures: 0, stockMismatches: 0 }
globalThis.__timelakeAvroInflate = stats

/**
 * @param {Uint8Array} input raw DEFLATE data of one Avro block
 * @returns {Uint8Array} the inflated block
 */
export function gunzip(input) {
  stats.blocks++
  const buf = inflateRawSync(input)
  const out = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength)
  if (stock) {
    try {
      const s = stock.gunzip(input)
      // The stock decoder may return an oversized buffer: compare the prefix.
      if (s.length < out.length || !out.every((b, i) => s[i] === b)) stats.stockMismatches++
    } catch {
      stats.stockFailures++
    }
  }
  return out
}
