/**
 * A 32-bit FNV-1a checksum of float32 arrays, word by word over their bit patterns, in the order
 * given. The master sends it with each update a worker mirrors, so that the worker can check that
 * its replica is the master's model bit for bit, not approximately: a mismatch (a different
 * optimizer, another runtime's rounding) makes the worker pull the model instead of drifting.
 */
export function modelChecksum(arrays: Iterable<Float32Array>): number {
  let hash = 0x811c9dc5 | 0;
  for (const values of arrays) hash = mixWords(hash, values);
  return hash >>> 0;
}

/**
 * The hot loop, apart from the unsigned result: in one function, V8 compiled the loop on stack
 * replacement without feedback for the code after it, and deoptimized on every call (0.9 ms a call
 * instead of 0.07 ms for a 56,000-weight model).
 */
function mixWords(seed: number, values: Float32Array): number {
  // A Float32Array's byteOffset is a multiple of 4, so the same bytes read as words need no copy.
  // Signed words: each stays a small integer to V8, where unsigned ones above 2^31 are boxed.
  const words = new Int32Array(values.buffer, values.byteOffset, values.length);
  let hash = seed;
  for (let i = 0; i < words.length; i++) hash = Math.imul(hash ^ (words[i] as number), 0x01000193);
  return hash;
}
