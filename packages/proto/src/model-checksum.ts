/**
 * A 32-bit FNV-1a checksum of float32 arrays, word by word over their bit patterns, in the order
 * given. The master sends it with each update a worker mirrors, so that the worker can check that
 * its replica is the master's model bit for bit, not approximately: a mismatch (a different
 * optimizer, another runtime's rounding) makes the worker pull the model instead of drifting.
 */
export function modelChecksum(arrays: Iterable<Float32Array>): number {
  let hash = 0x811c9dc5;
  for (const values of arrays) {
    // A Float32Array's byteOffset is a multiple of 4, so the same bytes read as words need no copy.
    // Signed words: each stays a small integer to V8, where unsigned ones above 2^31 are boxed.
    const words = new Int32Array(values.buffer, values.byteOffset, values.length);
    for (let i = 0; i < words.length; i++) hash = Math.imul(hash ^ (words[i] as number), 0x01000193);
  }
  return hash >>> 0;
}
