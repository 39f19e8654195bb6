import { cat } from '../recordio/cat.js';
import { index } from '../recordio/index.js';
import { inspect } from '../recordio/inspect.js';
import { write } from '../recordio/write.js';
import { subcommandGroup } from '../subcommand-group.js';

const usage = `Usage: edl recordio <inspect|cat|write|index> ...

  edl recordio inspect FILE [--json] [--verify]
      Chunks, records, compressors and sizes, from the chunk headers alone. --verify also decodes
      every chunk and lists the damaged ones (exit status 1 if any).

  edl recordio cat FILE [--start N] [--count M] [--format raw|hex|base64|jsonl|example]
      Prints records [N, N+M) (default: all). raw: the bytes then a newline; hex, base64: one line
      per record (an empty line for an empty record); jsonl: {"index","length","text"|"base64"};
      example: each record decoded as a tf.train.Example, in proto3 JSON (one line each).
      On a corrupt file, prints every record before the fault, then exits 1 with the error.

  edl recordio write OUT [--compressor none|snappy|gzip] [--max-chunk-bytes N]
                         [--gzip-level 1-9] [--format lines|hex|base64]
      Writes one record per line of standard input (default: snappy, 1 MiB chunks, lines).

  edl recordio index FILE [--output PATH] [--json]
      Writes the sidecar index FILE.idx (chunk offsets, sizes, record counts), which remote reads
      (s3://, https://) load in one GET instead of a request per chunk. FILE may be remote; the
      index of a remote FILE is written to --output, to be uploaded next to it.

Exit status: 0 success, 1 a file or data error, 2 bad arguments.`;

/** `edl recordio`: inspect, print and write RecordIO files. */
export const command = subcommandGroup('recordio', usage, {
  inspect,
  cat,
  write,
  index,
});
