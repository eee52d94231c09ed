// Module resolve hook, registered by read-table.mjs (node:module register).
//
// icebird's Avro reader (icebird/src/avro/avro.read.js) imports `gunzip` from
// hyparquet-compressors to decode `deflate` Avro blocks. That decoder fails
// with "RangeError: offset is out of bounds" on DEFLATE *stored*
// (uncompressed, BTYPE=00) blocks, which Go's compress/flate emits in the
// manifests iceberg-go writes when a block does not compress. The files are
// valid (zlib, Java and DuckDB read them); the decoder is not. This hook gives
// avro.read.js our `gunzip` (avro-inflate.mjs, Node's zlib.inflateRawSync)
// and leaves every other import of hyparquet-compressors (the Parquet page
// codecs: zstd, snappy, gzip, ...) untouched.

const AVRO_READER = '/icebird/src/avro/avro.read.js'

export async function resolve(specifier, context, nextResolve) {
  if (specifier === 'hyparquet-compressors' && context.parentURL?.endsWith(AVRO_READER)) {
    // Resolve the real module too, so the shim can compare against the very
    // copy icebird would have used.
    const stock = await nextResolve(specifier, context)
    const url = new URL('./avro-inflate.mjs', import.meta.url)
    url.searchParams.set('stock', stock.url)
    return { url: url.href, shortCircuit: true }
  }
  return nextResolve(specifier, context)
}
