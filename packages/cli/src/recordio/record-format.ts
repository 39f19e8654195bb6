import { EdlError } from '@edl/common';
import { exampleToJson } from '@edl/proto/example';

/** How `edl recordio cat` and `edl tfrecord cat` print a record. */
export type OutputFormat = 'raw' | 'hex' | 'base64' | 'jsonl' | 'example';
/** How `edl recordio write` reads a record from a line of standard input. */
export type InputFormat = 'lines' | 'hex' | 'base64';

/** Accepted values of `cat --format`. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['raw', 'hex', 'base64', 'jsonl', 'example'];
/** Accepted values of `write --format`. */
export const INPUT_FORMATS: readonly InputFormat[] = ['lines', 'hex', 'base64'];

const NEWLINE = Buffer.from('\n');
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * One record as printed by `cat`, newline included. `hex` and `base64` give exactly one line per
 * record (an empty line for an empty record); `raw` is the bytes then a newline; `jsonl` is one JSON
 * object per line with the record as `text` when it is valid UTF-8 and as `base64` otherwise;
 * `example` is the record decoded as a `tf.train.Example`, in the canonical proto3 JSON mapping
 * (throws {@link NotAnExample} for a record that is not one).
 */
export function formatRecord(
  record: Uint8Array,
  index: number,
  format: OutputFormat,
): (string | Uint8Array)[] {
  const bytes = Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  switch (format) {
    case 'raw':
      return [bytes, NEWLINE];
    case 'hex':
      return [`${bytes.toString('hex')}\n`];
    case 'base64':
      return [`${bytes.toString('base64')}\n`];
    case 'jsonl': {
      let text: string | undefined;
      try {
        text = utf8.decode(bytes);
      } catch {
        text = undefined;
      }
      const body = text === undefined ? { base64: bytes.toString('base64') } : { text };
      return [`${JSON.stringify({ index, length: bytes.length, ...body })}\n`];
    }
    case 'example':
      try {
        return [`${exampleToJson(bytes)}\n`];
      } catch (error) {
        throw new NotAnExample(`record ${index} is not a tf.train.Example: ${(error as Error).message}`);
      }
  }
}

/** A record printed with `--format example` that does not decode as a `tf.train.Example`. */
export class NotAnExample extends EdlError<'NOT_AN_EXAMPLE'> {
  override readonly name = 'NotAnExample';
  constructor(message: string) {
    super('NOT_AN_EXAMPLE', message);
  }
}

/** A line of input that is not valid in the chosen format. */
export class BadInputLine extends EdlError<'BAD_INPUT_LINE'> {
  override readonly name = 'BadInputLine';
  constructor(message: string) {
    super('BAD_INPUT_LINE', message);
  }
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The record a line of input stands for. `lines`: the bytes as they are (without the newline);
 * `hex` / `base64`: the decoded bytes, a trailing `\r` tolerated. Throws BadInputLine.
 */
export function parseRecordLine(line: Buffer, format: InputFormat, lineNumber: number): Uint8Array {
  if (format === 'lines') return line;
  let text = line.toString('latin1');
  if (text.endsWith('\r')) text = text.slice(0, -1);
  const valid = format === 'hex' ? HEX.test(text) : BASE64.test(text);
  if (!valid) {
    const shown = text.length > 40 ? `${text.slice(0, 40)}...` : text;
    const what = format === 'hex' ? 'an even number of hex digits' : 'base64';
    throw new BadInputLine(`line ${lineNumber}: Expected ${what} but received '${shown}'`);
  }
  return Buffer.from(text, format);
}
