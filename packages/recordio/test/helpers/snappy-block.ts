/**
 * A small snappy block decoder (format_description.txt of google/snappy), independent of the addon,
 * so that files our writer produces are checked by a second implementation.
 */
export function decodeSnappyBlock(input: Uint8Array): Uint8Array {
  let pos = 0;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    if (pos >= input.length || shift > 28) throw new Error('snappy: bad length varint');
    const byte = input[pos++] as number;
    length += (byte & 0x7f) * 2 ** shift;
    if (byte < 0x80) break;
  }
  const out = new Uint8Array(length);
  let op = 0;
  const need = (n: number) => {
    if (pos + n > input.length) throw new Error('snappy: input ends inside an element');
  };
  while (pos < input.length) {
    const tag = input[pos++] as number;
    const kind = tag & 3;
    if (kind === 0) {
      let len = tag >>> 2;
      if (len >= 60) {
        const extra = len - 59;
        need(extra);
        len = 0;
        for (let i = 0; i < extra; i++) len += (input[pos + i] as number) * 2 ** (8 * i);
        pos += extra;
      }
      len += 1;
      need(len);
      if (op + len > out.length) throw new Error('snappy: literal overflows the output');
      out.set(input.subarray(pos, pos + len), op);
      pos += len;
      op += len;
      continue;
    }
    let len: number;
    let offset: number;
    if (kind === 1) {
      need(1);
      len = 4 + ((tag >>> 2) & 7);
      offset = ((tag >>> 5) << 8) | (input[pos++] as number);
    } else if (kind === 2) {
      need(2);
      len = 1 + (tag >>> 2);
      offset = (input[pos] as number) | ((input[pos + 1] as number) << 8);
      pos += 2;
    } else {
      need(4);
      len = 1 + (tag >>> 2);
      offset =
        ((input[pos] as number) |
          ((input[pos + 1] as number) << 8) |
          ((input[pos + 2] as number) << 16) |
          ((input[pos + 3] as number) << 24)) >>>
        0;
      pos += 4;
    }
    if (offset === 0 || offset > op) throw new Error(`snappy: copy offset ${offset} at output ${op}`);
    if (op + len > out.length) throw new Error('snappy: copy overflows the output');
    // Byte by byte: a copy may overlap its own output (run-length style).
    for (let i = 0; i < len; i++, op++) out[op] = out[op - offset] as number;
  }
  if (op !== out.length) throw new Error(`snappy: decoded ${op} of ${out.length} bytes`);
  return out;
}
