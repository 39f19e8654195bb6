import { subcommandGroup } from '../subcommand-group.js';
import { cat } from '../tfrecord/cat.js';
import { inspect } from '../tfrecord/inspect.js';

const usage = `Usage: edl tfrecord <inspect|cat> ...

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

Exit status: 0 success, 1 a file or data error, 2 bad arguments.`;

/** `edl tfrecord`: inspect and print TensorFlow TFRecord files. */
export const command = subcommandGroup('tfrecord', usage, { inspect, cat });
