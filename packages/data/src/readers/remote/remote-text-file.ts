import type { ByteSource, ObjectStat } from '@edl/storage';
import { DataReaderError } from '../errors.js';
import type { TextFile, TextHandle, TextIndex } from '../text-index.js';
import type { IndexCache } from './index-cache.js';
import type { RemoteFileStats } from './remote-file.js';
import type { RemoteIndexReport } from './remote-index.js';

/**
 * A remote text object (S3, HTTP), read by ranged GETs pinned to the version it was stat'ed at: a
 * replaced object fails the read instead of mixing versions. Each handle fetches pieces of at most
 * `partBytes`, the next one while the last is scanned, so a handle holds at most two pieces.
 * Counts the GETs of the index build apart from those of the reads.
 */
export class RemoteTextFile implements TextFile {
  dataRequests = 0;
  dataBytes = 0;
  indexReport: RemoteIndexReport | undefined;
  #indexing = false;
  #indexRequests = 0;
  /** First pieces of announced reads, by offset, oldest first; their bytes stay within `readAheadBytes`. */
  readonly #ahead = new Map<number, { readonly length: number; readonly bytes: Promise<Uint8Array> }>();
  #aheadBytes = 0;

  constructor(
    readonly source: ByteSource,
    readonly object: ObjectStat,
    readonly partBytes: number,
    readonly readAheadBytes: number,
  ) {}

  get location(): string {
    return this.object.location;
  }

  async open(from: number, to: number): Promise<TextHandle> {
    return new RangedTextHandle(this, Math.max(from, Math.min(to, this.object.size)));
  }

  /** Bytes of the first pieces fetched for announced reads and not taken yet. */
  get aheadBytes(): number {
    return this.#aheadBytes;
  }

  /**
   * Fetches the first piece of a read of `[from, to)` now, so that a task announced ahead costs no
   * round trip when it is read. A piece that would take the pieces held past `readAheadBytes` is
   * not fetched ahead (its read fetches it): the pieces held are those of the reads due first.
   */
  prefetch(from: number, to: number): void {
    const length = Math.min(this.partBytes, Math.min(to, this.object.size) - from);
    if (length <= 0 || this.#aheadBytes + length > this.readAheadBytes || this.#ahead.has(from)) return;
    this.#aheadBytes += length;
    this.#ahead.set(from, { length, bytes: this.fetch(from, length) });
  }

  /**
   * Bytes `[at, at + length)`: the piece fetched ahead for them, or a GET now (into `into`, when
   * given). Reads come in the
   * order they were announced, so the pieces announced before a taken one were given up: dropped.
   */
  take(at: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    const held = this.#ahead.get(at);
    if (held === undefined || held.length !== length) return this.fetch(at, length, into);
    for (const [offset, earlier] of this.#ahead) {
      this.#ahead.delete(offset);
      this.#aheadBytes -= earlier.length;
      if (offset === at) break;
    }
    return held.bytes;
  }

  /**
   * One ranged GET, pinned to the version, counted to the index build or to the reads; into
   * `into` (a buffer the caller owns, of at least `length` bytes) when given.
   */
  fetch(at: number, length: number, into?: Uint8Array): Promise<Uint8Array> {
    if (this.#indexing) this.#indexRequests++;
    else {
      this.dataRequests++;
      this.dataBytes += length;
    }
    const { object } = this;
    const options = into === undefined ? {} : { into: into.subarray(0, length) };
    const bytes = this.source.readRange(object, at, length, options).then((fetched) => {
      if (fetched.byteLength !== length) {
        throw new DataReaderError(
          'IO',
          `cannot read ${object.location}: bytes [${at}, ${at + length}) came back as ${fetched.byteLength} bytes`,
        );
      }
      return fetched;
    });
    // A piece fetched ahead and never read must not be an unhandled rejection.
    bytes.catch(() => {});
    return bytes;
  }

  /**
   * The text index of this version of the object: from the cache (no request) or the master (a
   * worker pod's index provider) when either holds one for these options, else built by `build` (one streaming pass) and cached.
   *
   * @param kind - the index's format and the options that shape it (part of the cache key).
   */
  async index(cache: IndexCache, kind: string, build: () => Promise<TextIndex>): Promise<TextIndex> {
    const { location, version, size } = this.object;
    if (version !== undefined) {
      const cached = await cache.lookup(kind, location, version, (bytes) => decodeTextIndex(bytes, size));
      if (cached !== undefined) {
        this.indexReport = { origin: cached.origin, requests: 0 };
        return cached.value;
      }
    }
    this.#indexing = true;
    this.#indexRequests = 0;
    let index: TextIndex;
    try {
      index = await build();
    } finally {
      this.#indexing = false;
    }
    this.indexReport = { origin: 'header-walk', requests: this.#indexRequests };
    if (version !== undefined) await cache.putBytes(kind, location, version, encodeTextIndex(index));
    return index;
  }

  /** Requests and bytes so far (the index's report is a header walk of no request until it is built). */
  stats(): RemoteFileStats {
    const { location, dataRequests, dataBytes } = this;
    const index = this.indexReport ?? { origin: 'header-walk', requests: 0 };
    return { location, index, dataRequests, dataBytes, skippedChunks: 0 };
  }
}

/** Bytes of a piece fetched past a handle's `to` hint. */
const PAST_HINT_BYTES = 1 << 16;

/** One piece of the object: bytes `[at, at + bytes.length)`. */
interface Piece {
  readonly at: number;
  readonly bytes: Uint8Array;
}

/**
 * Reads of a remote text object from `from` on, served from fetched pieces. Pieces end at the
 * `to` hint (the end of a task's records), so a task fetches no byte past it unless its scan asks
 * for one; the next piece is fetched ahead only up to that hint.
 *
 * A piece the reads have moved past lends its buffer to the next fetch: a long read (the index's
 * streaming pass, a task of many pieces) fills the same two buffers over and over. Pieces left
 * for the garbage collector instead piled up dead until V8 collected them (V8 collects on the
 * growth of memory outside its heap only after tens of MiB): the index pass of a 64 MiB CSV object
 * peaked 68 MiB above the whole local read.
 */
class RangedTextHandle implements TextHandle {
  #piece: Piece | undefined;
  #next: { readonly at: number; readonly bytes: Promise<Uint8Array> } | undefined;
  /** The buffer of a piece the reads have moved past, free for the next fetch. */
  #spare: Uint8Array | undefined;

  constructor(
    readonly file: RemoteTextFile,
    readonly to: number,
  ) {}

  async read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number,
  ): Promise<{ bytesRead: number }> {
    if (position >= this.file.object.size || length <= 0) return { bytesRead: 0 };
    const piece = await this.#pieceAt(position);
    const start = position - piece.at;
    const bytesRead = Math.min(length, piece.bytes.byteLength - start);
    buffer.set(piece.bytes.subarray(start, start + bytesRead), offset);
    return { bytesRead };
  }

  async stat(): Promise<{ readonly size: number; readonly mtimeMs: number }> {
    // Reads are pinned to the version stat'ed at open: its size is the size, and a replaced
    // object fails the GET itself.
    return { size: this.file.object.size, mtimeMs: 0 };
  }

  async close(): Promise<void> {
    this.#piece = undefined;
    this.#next = undefined;
    this.#spare = undefined;
  }

  async #pieceAt(position: number): Promise<Piece> {
    const current = this.#piece;
    if (current !== undefined && position >= current.at && position < current.at + current.bytes.byteLength) {
      return current;
    }
    const next = this.#next;
    this.#next = undefined;
    // A next piece not wanted (a read elsewhere) may still be arriving: its buffer is not reused.
    const piece =
      next !== undefined && next.at === position
        ? { at: position, bytes: await next.bytes }
        : { at: position, bytes: await this.#fetch(position) };
    if (current !== undefined) this.#spare = current.bytes;
    this.#piece = piece;
    const end = piece.at + piece.bytes.byteLength;
    if (end < this.to) this.#next = { at: end, bytes: this.#fetch(end) };
    return piece;
  }

  #fetch(at: number): Promise<Uint8Array> {
    // Past the hint (a record longer than the first read expected) in small pieces.
    const length =
      at < this.to
        ? Math.min(this.file.partBytes, this.to - at)
        : Math.min(PAST_HINT_BYTES, this.file.object.size - at);
    const spare = this.#spare;
    this.#spare = undefined;
    // The spare is a whole piece's buffer (a view of none other), read by nothing any more.
    const into = spare !== undefined && spare.byteLength >= length ? spare : undefined;
    return this.file.take(at, length, into);
  }
}

/** `EDLTXTIX`: the first 8 bytes of a cached text index. */
const TEXT_INDEX_MAGIC = Buffer.from('EDLTXTIX', 'latin1');
/** After the magic, float64s: record count, stride, object size, then one offset per block. */
const TEXT_INDEX_FIELDS = 3;

/** A text index as cache bytes. The modification time is not kept: a cached index is found by version. */
export function encodeTextIndex(index: TextIndex): Uint8Array {
  const values = new Float64Array(TEXT_INDEX_FIELDS + index.blockOffsets.length);
  values.set([index.recordCount, index.stride, index.size]);
  values.set(index.blockOffsets, TEXT_INDEX_FIELDS);
  return Buffer.concat([TEXT_INDEX_MAGIC, Buffer.from(values.buffer)]);
}

/** The text index in cache bytes, or undefined for bytes that are not one of an object of `size` bytes. */
export function decodeTextIndex(bytes: Uint8Array, size: number): TextIndex | undefined {
  const magic = TEXT_INDEX_MAGIC.byteLength;
  if (bytes.byteLength < magic + 8 * TEXT_INDEX_FIELDS || (bytes.byteLength - magic) % 8 !== 0)
    return undefined;
  if (!TEXT_INDEX_MAGIC.equals(bytes.subarray(0, magic))) return undefined;
  // A copy: a Buffer's slice shares (and is not aligned in) Node's pool.
  const values = new Float64Array(Uint8Array.from(bytes.subarray(magic)).buffer);
  const [recordCount = -1, stride = 0, indexedSize = -1] = values;
  const blockOffsets = values.slice(TEXT_INDEX_FIELDS);
  const valid =
    indexedSize === size &&
    Number.isSafeInteger(recordCount) &&
    recordCount >= 0 &&
    Number.isSafeInteger(stride) &&
    stride >= 1 &&
    blockOffsets.length === Math.ceil(recordCount / stride) &&
    blockOffsets.every(
      (offset, i) => offset >= 0 && offset < size && (i === 0 || offset > (blockOffsets[i - 1] ?? 0)),
    );
  return valid ? { recordCount, stride, blockOffsets, size, mtimeMs: 0 } : undefined;
}
