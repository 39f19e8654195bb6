import { writeFile } from 'node:fs/promises';
import { buildSidecarIndex } from '@edl/data';
import { encodeSidecarIndex } from '@edl/recordio';
import { parseCommandLine } from '../args.js';
import { type CommandIO, UsageError } from '../command.js';

/**
 * `edl <recordio|tfrecord> index FILE [--output PATH] [--json]`: writes the sidecar index of a data
 * file (docs/recordio.md, "Sidecar index") to `FILE.idx`, or to `--output` (required for a remote
 * FILE: the index is written locally, to be uploaded next to the object). A damaged file is refused
 * with its error (exit status 1): its index would hide the damage.
 */
export async function writeSidecarIndex(
  format: 'recordio' | 'tfrecord',
  argv: string[],
  io: CommandIO,
): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { output: { type: 'string' }, json: { type: 'boolean' } },
    ['FILE'],
  );
  const file = positionals[0] as string;
  const remote = /^[a-z][a-z0-9+.-]+:/i.test(file) && !file.toLowerCase().startsWith('file:');
  if (remote && values.output === undefined) {
    throw new UsageError(
      `a remote FILE needs --output PATH: the index is written locally, to be uploaded as ${file}.idx`,
    );
  }
  const built = await buildSidecarIndex(file, format);
  const output = values.output ?? `${built.location}.idx`;
  const bytes = encodeSidecarIndex(built.index);
  await writeFile(output, bytes);
  const { index } = built;
  const report = {
    file: built.location,
    output,
    bytes: bytes.byteLength,
    records: index.numRecords,
    blocks: index.blocks.length,
    recordsPerBlock: index.recordsPerBlock,
    requests: built.requests,
  };
  if (values.json === true) {
    io.stdout.write(`${JSON.stringify(report)}\n`);
  } else {
    const blocks = format === 'recordio' ? `${index.blocks.length} chunks` : `${index.blocks.length} blocks`;
    io.stdout.write(
      `wrote ${output}: ${index.numRecords} records, ${blocks}, ${bytes.byteLength} bytes` +
        `${built.requests > 0 ? ` (${built.requests} requests)` : ''}\n`,
    );
  }
  return 0;
}

/** `edl recordio index FILE [--output PATH] [--json]`. */
export function index(argv: string[], io: CommandIO): Promise<number> {
  return writeSidecarIndex('recordio', argv, io);
}
