import type { CommandIO } from '../command.js';
import { writeSidecarIndex } from '../recordio/index.js';

/** `edl tfrecord index FILE [--output PATH] [--json]`: the sidecar index of an uncompressed TFRecord file. */
export function index(argv: string[], io: CommandIO): Promise<number> {
  return writeSidecarIndex('tfrecord', argv, io);
}
