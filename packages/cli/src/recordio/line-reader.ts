/**
 * Splits a byte stream into lines (without the `\n`). A last line without a newline still counts;
 * a trailing newline does not add an empty line. Lines are views into the stream's chunks when they
 * fit in one, so plain text costs no extra copy.
 */
export async function* readLines(stream: AsyncIterable<Buffer | string>): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  for await (const piece of stream) {
    const chunk = typeof piece === 'string' ? Buffer.from(piece) : piece;
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      const tail = chunk.subarray(start, nl);
      if (pending.length > 0) {
        pending.push(tail);
        yield Buffer.concat(pending);
        pending = [];
      } else {
        yield tail;
      }
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length > 0) yield Buffer.concat(pending);
}
