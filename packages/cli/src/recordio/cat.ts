import { RecordIOReader } from '@edl/recordio';
import { parseCommandLine } from '../args.js';
import type { CommandIO } from '../command.js';
import { BufferedOutput } from './output.js';
import { CAT_OPTIONS, printRecord } from './print-record.js';

/**
 * `edl recordio cat FILE [--start N] [--count M] [--format raw|hex|base64|jsonl|example]`. `--count` is
 * clamped to the records after `--start` (like `head -n`); a start past the end is an error. On a
 * corrupt file every record before the fault is printed, then the error propagates (exit 1).
 */
export async function cat(argv: string[], io: CommandIO): Promise<number> {
  const { values, positionals } = parseCommandLine(argv, CAT_OPTIONS, ['FILE']);
  const start = values.start ?? 0;
  const requested = values.count ?? Number.MAX_SAFE_INTEGER;
  const format = values.format ?? 'raw';

  const reader = await RecordIOReader.open(positionals[0] as string);
  const out = new BufferedOutput(io.stdout);
  try {
    const count = Math.min(requested, Math.max(reader.numRecords - start, 0));
    let index = start;
    for await (const record of reader.records(start, count)) {
      if (!(await printRecord(out, record, index, format, reader.path))) break;
      index++;
    }
  } finally {
    // Records before a fault reach stdout before the error is reported.
    await out.end();
    reader.close();
  }
  return 0;
}
