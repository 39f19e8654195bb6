import { subcommandGroup } from '../subcommand-group.js';
import { cat } from '../tfrecord/cat.js';
import { index } from '../tfrecord/index.js';
import { inspect } from '../tfrecord/inspect.js';

const usage = `Usage: edl tfrecord <inspect|cat|index> ...

  edl tfrecord inspect FILE [--json] [--verify] [--compression auto|none|gzip|zlib]
      Records, storage and damage: from the record headers (uncompressed) or one decompressing
      pass (GZIP/ZLIB). --json prints {"records": N, ...}; --verify also checks every data CRC of
      an uncompressed file. Exit status 1 if the file is damaged.

  edl tfrecord cat FILE [--start N] [--count M] [--format raw|hex|base64|jsonl|example]
                        [--compression auto|none|gzip|zlib]
      Prints records [N, N+M) (default: all), as 'edl recordio cat' does; example: each record
      decoded as a tf.train.Example in proto3 JSON. --compression auto (default) tells an
      uncompressed file from a GZIP or ZLIB stream by its first bytes. On a damaged file, prints
      every record before the fault, then exits 1 with the error.

  edl tfrecord index FILE [--output PATH] [--json]
      Writes the sidecar index FILE.idx of an uncompressed file (the offset of every Nth record,
      blocks of about 64 KiB), which remote reads load in one GET instead of reading the whole
      object. FILE may be remote; its index is then written to --output, to be uploaded next to it.

Exit status: 0 success, 1 a file or data error, 2 bad arguments.`;

/** `edl tfrecord`: inspect and print TensorFlow TFRecord files. */
export const command = subcommandGroup('tfrecord', usage, { inspect, cat, index });
