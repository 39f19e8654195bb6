import { DataReaderError } from './errors.js';

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const QUOTE = 0x22;

/** How a text file is cut into records: RFC 4180 CSV records, or physical lines. */
export type TextFormat = 'csv' | 'lines';

/** Receives each record's byte range `[start, end)`, the line ending excluded. */
export type RecordSink = (start: number, end: number) => void;

enum State {
  /** Outside quotes: in an unquoted field, or at a field or record start. */
  Outside,
  /** Inside a quoted field. */
  Quoted,
  /** Just after a quote inside a quoted field: an escaped quote or the closing quote. */
  AfterQuote,
  /** A carriage return after a closing quote: only a newline may follow. */
  AfterQuoteCr,
}

/**
 * Finds record boundaries in a byte stream fed in pieces, without decoding it. Works on bytes
 * because a newline, carriage return or quote byte never occurs inside a multi-byte UTF-8
 * character. In `csv` mode it follows RFC 4180 (a newline inside quotes is data, `""` is an escaped
 * quote), rejects a quote inside an unquoted field or text after a closing quote, and skips empty
 * lines; in `lines` mode every newline ends a record (empty lines are records). A `\r` before the
 * newline is part of the line ending.
 */
export class RecordBoundaryScanner {
  readonly #format: TextFormat;
  readonly #delimiter: number;
  readonly #sink: RecordSink;
  readonly #path: string;
  #state = State.Outside;
  #recordStart: number;
  /** The byte before the current buffer (to check what precedes a quote or newline). */
  #previousByte = -1;
  #records = 0;

  /**
   * @param format - `csv` or `lines`.
   * @param delimiter - the field delimiter byte (csv only).
   * @param sink - called for every record.
   * @param path - named in errors.
   * @param startOffset - byte offset of the first record (after a BOM).
   */
  constructor(format: TextFormat, delimiter: number, sink: RecordSink, path: string, startOffset = 0) {
    this.#format = format;
    this.#delimiter = delimiter;
    this.#sink = sink;
    this.#path = path;
    this.#recordStart = startOffset;
  }

  /** File offset where the record in progress (not yet ended) starts. */
  get pendingStart(): number {
    return this.#recordStart;
  }

  /** Scans `bytes`, whose first byte is at file offset `base`; pieces must be fed in order. */
  scan(bytes: Uint8Array, base: number): void {
    if (bytes.length === 0) return;
    if (this.#format === 'lines') this.#scanLines(bytes, base);
    else this.#scanCsv(bytes, base);
    this.#previousByte = bytes[bytes.length - 1]!;
  }

  /** Ends the stream at file offset `end`: a last record without a newline is still a record. */
  finish(end: number): void {
    if (this.#state === State.Quoted) {
      this.#fail(`unterminated quoted field (the record starts at byte ${this.#recordStart})`);
    }
    let recordEnd = end;
    if (this.#previousByte === CARRIAGE_RETURN && recordEnd > this.#recordStart) recordEnd -= 1;
    if (recordEnd > this.#recordStart) this.#emit(this.#recordStart, recordEnd);
    this.#recordStart = end;
    this.#state = State.Outside;
  }

  #scanLines(bytes: Uint8Array, base: number): void {
    let pos = 0;
    for (;;) {
      const nl = bytes.indexOf(NEWLINE, pos);
      if (nl < 0) return;
      this.#endRecord(bytes, base, nl);
      pos = nl + 1;
    }
  }

  #scanCsv(bytes: Uint8Array, base: number): void {
    const length = bytes.length;
    let pos = 0;
    // Cached positions of the next quote and newline at or after `pos` (-1: none in this piece),
    // so that long unquoted stretches are crossed with indexOf instead of a byte loop.
    let nextQuote = -2;
    let nextNewline = -2;
    while (pos < length) {
      switch (this.#state) {
        case State.Outside: {
          if (nextQuote !== -1 && nextQuote < pos) nextQuote = bytes.indexOf(QUOTE, pos);
          if (nextNewline !== -1 && nextNewline < pos) nextNewline = bytes.indexOf(NEWLINE, pos);
          if (nextQuote >= 0 && (nextNewline < 0 || nextQuote < nextNewline)) {
            const before = nextQuote > 0 ? bytes[nextQuote - 1]! : this.#previousByte;
            if (base + nextQuote !== this.#recordStart && before !== this.#delimiter) {
              this.#fail(`a quote inside an unquoted field at byte ${base + nextQuote}`);
            }
            this.#state = State.Quoted;
            pos = nextQuote + 1;
          } else if (nextNewline >= 0) {
            this.#endRecord(bytes, base, nextNewline);
            pos = nextNewline + 1;
          } else {
            pos = length;
          }
          break;
        }
        case State.Quoted: {
          const quote = bytes.indexOf(QUOTE, pos);
          if (quote < 0) {
            pos = length;
          } else {
            this.#state = State.AfterQuote;
            pos = quote + 1;
          }
          break;
        }
        case State.AfterQuote: {
          const byte = bytes[pos]!;
          if (byte === QUOTE) {
            this.#state = State.Quoted;
          } else if (byte === this.#delimiter) {
            this.#state = State.Outside;
          } else if (byte === NEWLINE) {
            this.#state = State.Outside;
            this.#endRecord(bytes, base, pos);
          } else if (byte === CARRIAGE_RETURN) {
            this.#state = State.AfterQuoteCr;
          } else {
            this.#fail(`unexpected character after a closing quote at byte ${base + pos}`);
          }
          pos += 1;
          break;
        }
        case State.AfterQuoteCr: {
          if (bytes[pos] !== NEWLINE)
            this.#fail(`unexpected character after a closing quote at byte ${base + pos}`);
          this.#state = State.Outside;
          this.#endRecord(bytes, base, pos);
          pos += 1;
          break;
        }
      }
    }
  }

  /** A newline at `bytes[nl]` ends the current record. */
  #endRecord(bytes: Uint8Array, base: number, nl: number): void {
    const before = nl > 0 ? bytes[nl - 1]! : this.#previousByte;
    let end = base + nl;
    if (before === CARRIAGE_RETURN && end > this.#recordStart) end -= 1;
    // An empty line is no CSV record (as csv-parse's skip_empty_lines); it is an empty plain line.
    if (end > this.#recordStart || this.#format === 'lines') this.#emit(this.#recordStart, end);
    this.#recordStart = base + nl + 1;
  }

  #emit(start: number, end: number): void {
    this.#records += 1;
    this.#sink(start, end);
  }

  #fail(what: string): never {
    throw new DataReaderError(
      'BAD_CSV',
      `${what}, in record ${this.#records} (counting from 0, header included) of ${this.#path}`,
    );
  }
}
