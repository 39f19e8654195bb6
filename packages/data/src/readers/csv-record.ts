const QUOTE = 0x22;

/**
 * Splits one complete CSV record (RFC 4180: fields separated by `delimiter`, a quoted field may hold
 * delimiters, newlines and `""` for a quote) into its fields. The record's boundaries were found by
 * `RecordBoundaryScanner`, which has already rejected malformed quoting, so this never sees a stray
 * quote; it still treats one literally rather than failing.
 */
export function parseCsvRecord(text: string, delimiter: string): string[] {
  const fields: string[] = [];
  const length = text.length;
  let pos = 0;
  for (;;) {
    if (pos < length && text.charCodeAt(pos) === QUOTE) {
      // A quoted field: pieces between escaped quotes are joined.
      let value = '';
      pos += 1;
      for (;;) {
        const quote = text.indexOf('"', pos);
        if (quote < 0) {
          value += text.slice(pos);
          pos = length;
          break;
        }
        value += text.slice(pos, quote);
        if (text.charCodeAt(quote + 1) === QUOTE) {
          value += '"';
          pos = quote + 2;
        } else {
          pos = quote + 1;
          break;
        }
      }
      // Anything between the closing quote and the delimiter is kept (the scanner forbids it).
      const next = text.indexOf(delimiter, pos);
      if (next < 0) {
        fields.push(value + text.slice(pos));
        return fields;
      }
      fields.push(value + text.slice(pos, next));
      pos = next + 1;
    } else {
      const next = text.indexOf(delimiter, pos);
      if (next < 0) {
        fields.push(text.slice(pos));
        return fields;
      }
      fields.push(text.slice(pos, next));
      pos = next + 1;
    }
  }
}
