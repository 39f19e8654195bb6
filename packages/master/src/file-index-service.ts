import { checkNonEmptyString } from '@edl/common';
import { type DataReader, defaultIndexCacheDir, IndexCache } from '@edl/data';
import {
  type GetFileIndexRequest,
  type GetFileIndexResponse,
  grpcError,
  WRONG_TOKEN_DETAILS,
} from '@edl/proto';
import type { Metadata, ServerUnaryCall, sendUnaryData } from '@edl/proto/grpc';
import { status } from '@edl/proto/grpc';

/**
 * The largest index the master sends in one GetFileIndex reply (16 MiB: about two million TFRecord
 * block offsets or text line-block offsets, or a million RecordIO chunks). A larger one is not
 * sent; the worker is told its size and builds it itself, with a warning.
 */
export const FILE_INDEX_MAX_BYTES = 16 * 1024 * 1024;

/** Room left in a reply for everything but the index bytes. */
const REPLY_OVERHEAD_BYTES = 1024;

/** The longest `kind` or `location` a request may name: a URL, or a text reader's index key. */
const MAX_NAME_CHARS = 8192;

/**
 * The index cache directories of a job's readers: each remote reader's `remote.indexCacheDir`, or
 * the default directory (`EDL_INDEX_CACHE_DIR`) when it names none. Where the master's readers
 * cached the indexes they read or built while cutting shards.
 */
export function indexCacheDirsOf(readers: readonly (DataReader<unknown> | undefined)[]): string[] {
  const directories = new Set<string>();
  for (const reader of readers) {
    if (reader === undefined) continue;
    const remote = reader.describe?.().params.remote;
    const named =
      typeof remote === 'object' && remote !== null && !Array.isArray(remote)
        ? remote.indexCacheDir
        : undefined;
    directories.add(typeof named === 'string' && named !== '' ? named : defaultIndexCacheDir());
  }
  return [...directories];
}

/**
 * The GetFileIndex handler: answers a worker's request for the index of one version of a remote
 * object from the master's index caches, never building one (the master's readers built them when
 * cutting shards; the worker builds what the master lacks). The cache is keyed by the version, so
 * an index of another version of the object is never sent. An index over `maxReplyBytes` is not
 * sent: the reply gives its size, and the worker builds it. Every call must carry the job token.
 *
 * @param authorized - the job token check of the master's other calls.
 * @param directories - the index cache directories to look in, in order.
 * @param maxReplyBytes - the server's message limit; the index limit is the smaller of it (less a
 *   reply's overhead) and {@link FILE_INDEX_MAX_BYTES}.
 */
export function fileIndexHandler(
  authorized: (metadata: Metadata) => boolean,
  directories: readonly string[],
  maxReplyBytes: number,
) {
  const caches = directories.map((directory) => new IndexCache(directory));
  const limitBytes = Math.min(FILE_INDEX_MAX_BYTES, maxReplyBytes - REPLY_OVERHEAD_BYTES);
  const answer = async (request: GetFileIndexRequest): Promise<GetFileIndexResponse> => {
    const kind = checkName(request.kind, 'kind');
    const location = checkName(request.location, 'location');
    const version = checkName(request.version, 'version');
    const reply: GetFileIndexResponse = {
      $typeName: 'edl.v1.GetFileIndexResponse',
      index: new Uint8Array(0),
      found: false,
      tooLargeBytes: 0n,
      limitBytes: BigInt(limitBytes),
    };
    for (const cache of caches) {
      const bytes = await cache.getBytes(kind, location, version);
      if (bytes === undefined) continue;
      if (bytes.byteLength > limitBytes) return { ...reply, tooLargeBytes: BigInt(bytes.byteLength) };
      return { ...reply, index: bytes, found: true };
    }
    return reply;
  };
  return (
    call: ServerUnaryCall<GetFileIndexRequest, GetFileIndexResponse>,
    callback: sendUnaryData<GetFileIndexResponse>,
  ) => {
    if (!authorized(call.metadata)) {
      callback(grpcError(status.UNAUTHENTICATED, WRONG_TOKEN_DETAILS));
      return;
    }
    answer(call.request).then(
      (reply) => callback(null, reply),
      (error: unknown) =>
        callback(
          grpcError(
            error instanceof RangeError || error instanceof TypeError
              ? status.INVALID_ARGUMENT
              : status.INTERNAL,
            error instanceof Error ? error.message : String(error),
          ),
        ),
    );
  };
}

function checkName(value: string, name: string): string {
  checkNonEmptyString(value, name);
  if (value.length > MAX_NAME_CHARS) {
    throw new RangeError(
      `Expected at most ${MAX_NAME_CHARS} characters for ${name} but received ${value.length}`,
    );
  }
  return value;
}
