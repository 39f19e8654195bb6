/*
 * Over 500 lines on purpose: planning ranges into pieces, fetching them ahead within the budget,
 * tails shared by adjacent ranges and the reuse of fetch and decode buffers all act on one set of
 * pieces, and splitting them would pass that state between files.
 */
import type { IndexedBlock, RecordBatch, SidecarIndex } from '@edl/recordio';
import type { ByteSource, ObjectStat } from '@edl/storage';
import { DataReaderError } from '../errors.js';
import { IndexCache } from './index-cache.js';
import { RangePace } from './range-pace.js';
import { type DecodeBuffers, RemoteFile, type RemoteFileStats } from './remote-file.js';
import { loadRemoteIndex } from './remote-index.js';
import { RemoteStream } from './remote-stream.js';
import { SpareBuffers } from './spare-buffers.js';

/** An opened remote object: indexed ({@link RemoteFile}) or, GZIP/ZLIB TFRecord, a stream. */
export type RemoteObject = RemoteFile | RemoteStream;

/** Whether an opened file is a remote object (not a native reader of a local file). */
export function isRemoteObject(value: unknown): value is RemoteObject {
  return value instanceof RemoteFile || value instanceof RemoteStream;
}

/** How remote objects are fetched: part size, parallelism, read-ahead budget, index cache. */
export interface ResolvedRemoteReadOptions {
  readonly partBytes: number;
  readonly maxInFlight: number;
  readonly readAheadBytes: number;
  readonly indexCacheDir: string;
}

/** What {@link RemoteReads.stats} reports. */
export interface RemoteReadStats {
  /** Per remote file opened: how it was indexed, data requests and bytes. */
  readonly files: readonly RemoteFileStats[];
  /** Fetched bytes held now (parts in flight or not yet decoded). */
  readonly bufferedBytes: number;
  /** The most fetched bytes held at once. */
  readonly peakBufferedBytes: number;
}

/** Last blocks of ranges kept for the next range of their file (least recently planned dropped). */
const MAX_TAILS = 16;
/** Idle decoded buffers kept for the next decodes (each of data and bounds). */
const SPARE_BUFFERS = 2;
/**
 * Idle fetch buffers kept at most (their bytes are bounded by the read-ahead budget; this bounds
 * the search for one that fits).
 */
const FETCH_SPARE_BUFFERS = 64;
/** Buffers under this are left to the garbage collector: cheap to allocate, not worth keeping. */
const MIN_SPARE_BYTES = 64 * 1024;

/** Blocks `first..last` of a file, fetched with one ranged GET (or taken from the previous range). */
class Piece {
  #bytes: Promise<Uint8Array> | undefined;
  /** Counted in the read-ahead budget until released. */
  charged = false;
  /** Its range was given up: read-ahead passes it over. */
  dropped = false;
  /** The tail whose block this piece holds, copied out when the bytes arrive. */
  tailOf: Tail | undefined;

  constructor(
    readonly file: RemoteFile,
    readonly first: number,
    readonly last: number,
    /** Bytes the GET asks for; 0 for a block taken over from the previous range. */
    readonly length: number,
    private readonly load: () => Promise<Uint8Array>,
  ) {}

  get started(): boolean {
    return this.#bytes !== undefined;
  }

  /** The piece's bytes, fetched on the first call. */
  bytes(): Promise<Uint8Array> {
    if (this.#bytes === undefined) {
      this.#bytes = this.load();
      // A read-ahead that fails is reported by the read that needs it, never as unhandled.
      this.#bytes.catch(() => {});
    }
    return this.#bytes;
  }
}

/** A planned range of one file: its pieces, in order. */
interface PlannedRange {
  readonly key: string;
  readonly file: RemoteFile;
  readonly start: number;
  readonly end: number;
  /** Its place in announce order (-1 for a range a read planned unannounced). */
  readonly order: number;
  /** Emptied as they are read, so that a long range does not hold its fetched bytes. */
  readonly pieces: (Piece | undefined)[];
  /** Where read-ahead goes on: the pieces before it are started, read or given up. */
  ahead: number;
}

/**
 * The last block of a range that ends inside it, for the next range of the file to start from: a
 * copy of the block, made when the piece holding it arrives (so the piece's bytes are not kept).
 */
interface Tail {
  readonly block: number;
  /** The piece the block comes in, until the copy is made. */
  holder: Piece | undefined;
  /** Where the block lies in its holder's bytes. */
  readonly at: number;
  readonly length: number;
  copy: Promise<Uint8Array> | undefined;
}

/** The block's bytes: the copy, made now from the holder's bytes (fetched if need be) if not made yet. */
function tailBytes(tail: Tail): Promise<Uint8Array> {
  if (tail.copy === undefined) {
    const holder = tail.holder as Piece;
    tail.holder = undefined;
    tail.copy = holder.bytes().then((bytes) => bytes.slice(tail.at, tail.at + tail.length));
  }
  return tail.copy;
}

/** Puts `range` into `ranges` (kept in announce order) after every range announced before it. */
function insertInOrder(ranges: PlannedRange[], range: PlannedRange): void {
  let at = ranges.length;
  while (at > 0 && (ranges[at - 1] as PlannedRange).order > range.order) at--;
  ranges.splice(at, 0, range);
}

/**
 * The remote half of the file reader core: objects with no local path (S3, HTTP) are indexed
 * ({@link loadRemoteIndex}) and read by ranged GETs of whole chunks or frame blocks, decoded
 * natively from memory.
 *
 * - A range maps to blocks `first..last`, cut into pieces of at most `partBytes` (one block when a
 *   block is bigger), one GET each, at most `maxInFlight` GETs at once.
 * - Announced ranges ({@link RemoteReads.announce}) are planned each as soon as its file is open
 *   (indexed), whatever the opens of the files announced before it, and fetched ahead, earlier
 *   announcements first among those planned, while fetched and
 *   undecoded bytes stay within `readAheadBytes` (one piece is fetched whatever its size when
 *   nothing is held); a read fetches its own next piece at once whatever the budget. So at most
 *   `readAheadBytes` (or one piece) plus one piece per read in progress are held, plus a copy of
 *   the last block of up to 16 files' last ranges.
 * - A range that ends inside a block keeps that block for the next range of its file, which starts
 *   there: adjacent tasks never fetch a block twice.
 * - Ranges announced before the one being read and not read yet are given up (a consumer reads in
 *   announce order; one that comes back for them fetches them again).
 * - Each GET's body is received into one buffer of its known length, reused once the piece is
 *   decoded (RecordIO) or its batch released (TFRecord, whose records are views of it); released
 *   RecordIO batches' buffers are decoded into again, as the local reader does. A piece's bytes are
 *   counted in the read-ahead budget until it is decoded, and idle fetch buffers are kept only
 *   within that budget (fetched, undecoded bytes plus idle fetch buffers stay within
 *   `readAheadBytes`, or one piece, plus one piece per read in progress): a long read fetches into
 *   the buffers of the pieces it decoded instead of fresh memory. Beside that, the buffers of 2
 *   released RecordIO batches are kept.
 */
export class RemoteReads {
  readonly #format: SidecarIndex['format'];
  readonly #options: ResolvedRemoteReadOptions;
  readonly #onCorruptChunk: 'error' | 'skip';
  readonly #resolve: (location: string) => Promise<{ source: ByteSource; object: ObjectStat }>;
  readonly #cache: IndexCache;
  readonly #files = new Map<string, Promise<RemoteObject>>();
  readonly #opened = new Map<string, RemoteObject>();
  /** Opens of announced files waiting for a slot, in announce order. */
  readonly #waitingOpens = new Map<string, WaitingOpen>();
  /** Opens (index loads) in progress. */
  #opens = 0;
  /** Per announced range not planned yet: its file, and when it is planned. */
  readonly #plannedBy = new Map<string, { readonly location: string; readonly planned: Promise<void> }>();
  /** Announcements so far: the next one's place in announce order. */
  #announcements = 0;
  /**
   * The latest announced range a read has claimed: one announced before it and planned after the
   * claim (its file's open was slower) is given up, as it would have been had it been planned.
   */
  #claimedOrder = -1;
  /** Announced ranges planned and not read yet, in announce order. */
  readonly #announced: PlannedRange[] = [];
  /** Planned announced ranges with pieces left to fetch ahead, in announce order. */
  readonly #queue: PlannedRange[] = [];
  readonly #tails = new Map<string, Tail>();
  /** Buffers of decoded pieces (and of released TFRecord batches, whose records were views of them). */
  readonly #fetchSpares = new SpareBuffers(FETCH_SPARE_BUFFERS, MIN_SPARE_BYTES);
  /** Buffers of released RecordIO batches, for the next decodes to fill. */
  readonly #dataSpares = new SpareBuffers(SPARE_BUFFERS, MIN_SPARE_BYTES);
  readonly #boundsSpares = new SpareBuffers(SPARE_BUFFERS, MIN_SPARE_BYTES);
  readonly #recycleDecoded = (data: ArrayBufferLike, bounds: ArrayBufferLike): void => {
    if (this.#closed) return;
    this.#dataSpares.give(data);
    if (bounds !== data) this.#boundsSpares.give(bounds);
  };
  readonly #recycleFetched = (data: ArrayBufferLike): void => {
    if (!this.#closed) this.#fetchSpares.give(data, this.#options.readAheadBytes - this.#bufferedBytes);
  };
  /** Fetch times and the consumer's pace: how many ranges to have announced ahead. */
  readonly #pace = new RangePace();
  #inFlight = 0;
  #bufferedBytes = 0;
  #peakBufferedBytes = 0;
  #closed = false;

  /**
   * @param format - the data files' format.
   * @param options - part size, parallelism, read-ahead budget and index cache.
   * @param onCorruptChunk - RecordIO's option of that name.
   * @param resolve - the byte source and stat of a location (the reader's listing).
   */
  constructor(
    format: SidecarIndex['format'],
    options: ResolvedRemoteReadOptions,
    onCorruptChunk: 'error' | 'skip',
    resolve: (location: string) => Promise<{ source: ByteSource; object: ObjectStat }>,
  ) {
    this.#format = format;
    this.#options = options;
    this.#onCorruptChunk = onCorruptChunk;
    this.#resolve = resolve;
    this.#cache = new IndexCache(options.indexCacheDir);
  }

  /**
   * The opened remote file at `location`, indexed once (a failed open is tried again next time).
   * Opened now, even when an announcement queued its open behind others: a read waits on it.
   */
  file(location: string): Promise<RemoteObject> {
    return this.#file(location, true);
  }

  /**
   * Plans records `[start, end)` of `location` (a checked, non-empty range) and fetches it ahead.
   * The file is opened (indexed) at once, beside the files of other announcements (at most
   * `maxInFlight` opens at a time), so that many small objects' index loads and GETs overlap.
   * The range is planned as soon as its own file is open, so that one slow index load does not
   * hold back the GETs of the files announced after it; planned ranges are fetched in announce
   * order (ranges of one file are planned in announce order too: they wait on the same open).
   */
  announce(location: string, start: number, end: number): void {
    if (this.#closed) return;
    const opening = this.#file(location, false);
    // Advisory: the read of the range reports a failed open.
    opening.catch(() => {});
    const key = rangeKey(location, start, end);
    const planned = this.#planAnnounced(opening, start, end, this.#announcements++).finally(() => {
      if (this.#plannedBy.get(key)?.planned === planned) this.#plannedBy.delete(key);
    });
    this.#plannedBy.set(key, { location, planned });
  }

  async #planAnnounced(
    opening: Promise<RemoteObject>,
    start: number,
    end: number,
    order: number,
  ): Promise<void> {
    let file: RemoteObject;
    try {
      file = await opening;
    } catch {
      return;
    }
    // A stream is read in order from its start: nothing to fetch ahead of the range before it.
    if (this.#closed || !(file instanceof RemoteFile) || end > file.numRecords) return;
    // Planned even when given up, so that the file's next range starts from this one's tail.
    const range = this.#plan(file, start, end, order);
    if (order < this.#claimedOrder) {
      this.#dropAll(range);
      return;
    }
    insertInOrder(this.#announced, range);
    insertInOrder(this.#queue, range);
    this.#pump();
  }

  /** The batches of records `[start, end)` of an opened file (a checked, non-empty range). */
  async *read(file: RemoteObject, start: number, end: number): AsyncGenerator<RecordBatch> {
    this.#pace.readStarted();
    await this.#plannedBefore(file.location, start, end);
    if (file instanceof RemoteStream) {
      yield* file.batches(start, end);
      return;
    }
    const range = this.#claim(file.location, start, end) ?? this.#plan(file, start, end);
    const { pieces } = range;
    try {
      for (let next = 0; next < pieces.length; next++) {
        this.#checkOpen();
        const piece = pieces[next] as Piece;
        pieces[next] = undefined;
        // The read's own next piece goes now, whatever the read-ahead budget.
        if (!piece.started) this.#start(piece);
        let batch: RecordBatch;
        let decoded: ArrayBufferLike | undefined;
        try {
          const waitStarted = performance.now();
          const bytes = await piece.bytes();
          this.#pace.waited((performance.now() - waitStarted) / 1000);
          this.#keepTail(piece, bytes);
          batch = await file.decode(
            bytes,
            piece.first,
            piece.last,
            start,
            end,
            this.#onCorruptChunk,
            this.#decodeBuffers(piece),
          );
          // RecordIO decodes into other memory: the fetched bytes are free now (a TFRecord
          // batch's records are views of them, so its release frees them).
          if (this.#format === 'recordio' && piece.length > 0) decoded = bytes.buffer;
        } finally {
          this.#release(piece, decoded);
        }
        yield batch;
      }
    } finally {
      this.#dropAll(range);
    }
  }

  /**
   * When the range can be claimed or planned: an announced range once it is planned, whatever
   * other files' indexes; another (not announced, or read again) once the announced ranges of its
   * file are planned, since the last one's tail may be its first block.
   */
  async #plannedBefore(location: string, start: number, end: number): Promise<void> {
    const key = rangeKey(location, start, end);
    const own = this.#plannedBy.get(key);
    if (own !== undefined) return own.planned;
    if (this.#announced.some((range) => range.key === key)) return;
    const sameFile = [...this.#plannedBy.values()].filter((pending) => pending.location === location);
    await Promise.all(sameFile.map((pending) => pending.planned));
  }

  /** Bytes of the announced ranges not read yet (planned ones: an announcement waits for its file's index). */
  get announcedBytes(): number {
    let bytes = 0;
    for (const range of this.#announced) for (const piece of range.pieces) bytes += piece?.length ?? 0;
    return bytes;
  }

  /**
   * Ranges this reader wants announced ahead of the one read: enough to hide its GETs' time at the
   * pace ranges are read (Little's law, {@link RangePace}), 1 to 64.
   */
  get rangesWanted(): number {
    return this.#pace.wanted;
  }

  /** Requests and bytes per remote file, and the fetched bytes held. */
  stats(): RemoteReadStats {
    return {
      files: [...this.#opened.values()].map((file) => file.stats()),
      bufferedBytes: this.#bufferedBytes,
      peakBufferedBytes: this.#peakBufferedBytes,
    };
  }

  /** Gives up every announced range; reads in progress fail with `CLOSED` at their next piece. */
  close(): void {
    this.#closed = true;
    const waiting = [...this.#waitingOpens.values()];
    this.#waitingOpens.clear();
    for (const open of waiting) {
      open.fail(new DataReaderError('CLOSED', `the reader was closed before ${open.location} was opened`));
    }
    for (const file of this.#opened.values()) file.close();
    for (const range of this.#announced) this.#dropAll(range);
    this.#announced.length = 0;
    this.#queue.length = 0;
    this.#tails.clear();
    this.#fetchSpares.clear();
    this.#dataSpares.clear();
    this.#boundsSpares.clear();
  }

  /** The file's open, started now if `now` or a slot is free, else queued for one. */
  #file(location: string, now: boolean): Promise<RemoteObject> {
    const file = this.#files.get(location);
    if (file !== undefined) {
      if (now) this.#waitingOpens.get(location)?.start();
      return file;
    }
    const opening = new Promise<RemoteObject>((resolve, reject) => {
      const start = (): void => {
        this.#waitingOpens.delete(location);
        this.#opens++;
        this.#open(location)
          .then(resolve, reject)
          .finally(() => {
            this.#opens--;
            this.#startWaitingOpens();
          });
      };
      if (now || this.#opens < this.#options.maxInFlight) start();
      else this.#waitingOpens.set(location, { location, start, fail: reject });
    });
    this.#files.set(location, opening);
    opening.then(
      (opened) => this.#opened.set(location, opened),
      () => this.#files.delete(location),
    );
    return opening;
  }

  #startWaitingOpens(): void {
    for (const open of this.#waitingOpens.values()) {
      if (this.#closed || this.#opens >= this.#options.maxInFlight) return;
      open.start();
    }
  }

  async #open(location: string): Promise<RemoteObject> {
    const { source, object } = await this.#resolve(location);
    const loaded = await loadRemoteIndex(this.#format, source, object, this.#cache);
    if ('compressed' in loaded) {
      return RemoteStream.open(source, object, loaded.compressed, this.#options.partBytes, loaded.requests);
    }
    return new RemoteFile(source, object, loaded.index, loaded.report);
  }

  /** Cuts `[start, end)` into pieces, starting from the previous range's last block when it is this one's first. */
  #plan(file: RemoteFile, start: number, end: number, order = -1): PlannedRange {
    const { blocks } = file.index;
    const first = file.blockOf(start);
    const last = file.blockOf(end - 1);
    const pieces: Piece[] = [];
    let block = first;
    const tail = this.#tails.get(file.location);
    if (tail !== undefined && tail.block === first) {
      pieces.push(new Piece(file, first, first, 0, () => tailBytes(tail)));
      block++;
    }
    while (block <= last) {
      const from = block;
      const offset = (blocks[from] as IndexedBlock).offset;
      let length = (blocks[block] as IndexedBlock).byteLength;
      while (
        block < last &&
        length + (blocks[block + 1] as IndexedBlock).byteLength <= this.#options.partBytes
      ) {
        block++;
        length += (blocks[block] as IndexedBlock).byteLength;
      }
      pieces.push(this.#piece(file, from, block, offset, length));
      block++;
    }
    const lastBlock = blocks[last] as IndexedBlock;
    this.#tails.delete(file.location);
    if (end < lastBlock.firstRecord + lastBlock.numRecords) {
      const holder = pieces[pieces.length - 1] as Piece;
      const keep: Tail =
        holder.length === 0 && tail !== undefined
          ? tail
          : {
              block: last,
              holder,
              at: lastBlock.offset - (blocks[holder.first] as IndexedBlock).offset,
              length: lastBlock.byteLength,
              copy: undefined,
            };
      if (keep.holder !== undefined) keep.holder.tailOf = keep;
      this.#tails.set(file.location, keep);
      if (this.#tails.size > MAX_TAILS) this.#tails.delete(this.#tails.keys().next().value as string);
    }
    return { key: rangeKey(file.location, start, end), file, start, end, order, pieces, ahead: 0 };
  }

  #piece(file: RemoteFile, first: number, last: number, offset: number, length: number): Piece {
    return new Piece(file, first, last, length, async () => {
      file.dataRequests++;
      file.dataBytes += length;
      this.#inFlight++;
      const started = performance.now();
      try {
        const bytes = await file.source.readRange(file.object, offset, length, {
          into: this.#fetchBuffer(length),
        });
        this.#pace.fetched((performance.now() - started) / 1000);
        return bytes;
      } finally {
        this.#inFlight--;
        this.#pump();
      }
    });
  }

  /** The announced range read now; ranges announced before it and not read are given up. */
  #claim(location: string, start: number, end: number): PlannedRange | undefined {
    const key = rangeKey(location, start, end);
    const at = this.#announced.findIndex((range) => range.key === key);
    if (at < 0) return undefined;
    const passed = this.#announced.splice(0, at + 1);
    const range = passed.pop() as PlannedRange;
    this.#claimedOrder = Math.max(this.#claimedOrder, range.order);
    for (const skipped of passed) this.#dropAll(skipped);
    return range;
  }

  /**
   * Copies the tail block out of `piece` now that its bytes are here, if a tail waits on it (found
   * through the piece, not the file's current tail: a range planned already may still need it, and
   * the piece's buffer is reused once decoded).
   */
  #keepTail(piece: Piece, bytes: Uint8Array): void {
    const tail = piece.tailOf;
    piece.tailOf = undefined;
    if (tail?.holder !== piece) return;
    tail.holder = undefined;
    tail.copy = Promise.resolve(bytes.slice(tail.at, tail.at + tail.length));
  }

  /**
   * A buffer to receive `length` fetched bytes: a spare big enough, else a new one, of `partBytes`
   * for a piece of over half of it (so that the pieces of a long range fit each other's spares),
   * else of the length rounded up to an eighth of its power of two (at most 1/8 more), so that
   * pieces of about the same size (small whole files) fit each other's spares too.
   */
  #fetchBuffer(length: number): Uint8Array {
    const spare = this.#fetchSpares.take(length);
    if (spare !== undefined) return new Uint8Array(spare, 0, length);
    // A new buffer: the spares left must not take the budget the fetched bytes need.
    this.#fetchSpares.trim(this.#options.readAheadBytes - this.#bufferedBytes);
    const { partBytes } = this.#options;
    const step = 2 ** Math.max(0, Math.floor(Math.log2(length)) - 3);
    const size = length > partBytes / 2 ? Math.max(length, partBytes) : Math.ceil(length / step) * step;
    return new Uint8Array(new ArrayBuffer(size), 0, length);
  }

  /**
   * What the decode of `piece` may reuse and recycle: RecordIO decodes into spare batch buffers;
   * a TFRecord batch (views of the fetched bytes) gives the fetch buffer back on release, unless
   * the bytes are a tail's copy, which the next range of the file may share.
   */
  #decodeBuffers(piece: Piece): DecodeBuffers {
    if (this.#format === 'recordio') {
      return {
        reuse: { data: this.#dataSpares.takeAny(), bounds: this.#boundsSpares.takeAny() },
        recycle: this.#recycleDecoded,
      };
    }
    return piece.length > 0 ? { recycle: this.#recycleFetched } : {};
  }

  #start(piece: Piece): void {
    if (piece.length > 0) {
      piece.charged = true;
      this.#bufferedBytes += piece.length;
      this.#peakBufferedBytes = Math.max(this.#peakBufferedBytes, this.#bufferedBytes);
    }
    void piece.bytes();
  }

  /**
   * Its bytes are no longer held for the read-ahead; `freed`, the buffer they were fetched into,
   * is kept for the next GET when the budget has room, before the read-ahead goes on.
   */
  #release(piece: Piece, freed?: ArrayBufferLike): void {
    if (piece.charged) {
      piece.charged = false;
      this.#bufferedBytes -= piece.length;
    }
    if (freed !== undefined) this.#recycleFetched(freed);
    this.#pump();
  }

  /** Gives up the pieces of `range` not read yet. */
  #dropAll(range: PlannedRange): void {
    for (const piece of range.pieces) if (piece !== undefined) this.#drop(piece);
  }

  #drop(piece: Piece): void {
    piece.dropped = true;
    if (piece.charged) {
      // Released once settled: until then its bytes are in flight.
      piece.bytes().then(
        () => this.#release(piece),
        () => this.#release(piece),
      );
    }
  }

  /**
   * Starts the pieces of planned announced ranges, in announce order, while GETs and budget allow
   * (at least one when nothing is held).
   */
  #pump(): void {
    while (!this.#closed && this.#queue.length > 0 && this.#inFlight < this.#options.maxInFlight) {
      const range = this.#queue[0] as PlannedRange;
      if (range.ahead >= range.pieces.length) {
        this.#queue.shift();
        continue;
      }
      const piece = range.pieces[range.ahead];
      // Taken by its read (which starts it), started already or given up.
      if (piece === undefined || piece.started || piece.dropped) {
        range.ahead++;
        continue;
      }
      if (this.#bufferedBytes > 0 && this.#bufferedBytes + piece.length > this.#options.readAheadBytes)
        return;
      range.ahead++;
      this.#start(piece);
    }
  }

  #checkOpen(): void {
    if (this.#closed) {
      throw new DataReaderError('CLOSED', 'the reader was closed while reading a remote object');
    }
  }
}

/** An announced file's open, queued until fewer than `maxInFlight` opens are in progress. */
interface WaitingOpen {
  readonly location: string;
  readonly start: () => void;
  readonly fail: (error: Error) => void;
}

function rangeKey(location: string, start: number, end: number): string {
  return `${start}:${end}:${location}`;
}
