/**
 * Prepares a value for `postMessage` and collects the ArrayBuffers to transfer with it. Typed-array
 * views are copied to buffers of exactly their bytes (transferred, so that is the only copy), or with
 * `transferAsIs` their buffers are transferred as they are. Plain objects and arrays are walked (8
 * levels deep); anything else is structured-cloned. The parent packs inputs with it, and each thread
 * packs its results with `transferAsIs`, so both directions walk values the same way.
 */
export function packForTransfer(
  value: unknown,
  transferAsIs: boolean,
  transfer: Set<ArrayBuffer>,
  depth = 0,
): unknown {
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (ArrayBuffer.isView(value)) {
    if (!(value.buffer instanceof ArrayBuffer)) return value; // SharedArrayBuffer: shared, not copied
    if (transferAsIs) {
      transfer.add(value.buffer);
      return value;
    }
    const bytes = value.buffer.slice(value.byteOffset, value.byteOffset + value.byteLength);
    transfer.add(bytes);
    if (value instanceof DataView) return new DataView(bytes);
    const Typed = value.constructor as new (buffer: ArrayBuffer) => ArrayBufferView;
    return new Typed(bytes);
  }
  if (value instanceof ArrayBuffer) {
    if (transferAsIs) transfer.add(value);
    return value;
  }
  if (Array.isArray(value))
    return value.map((item) => packForTransfer(item, transferAsIs, transfer, depth + 1));
  if (Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value))
      out[key] = packForTransfer(item, transferAsIs, transfer, depth + 1);
    return out;
  }
  return value;
}
