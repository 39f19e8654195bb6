import { type PrefetchedBatch, type Prefetcher, PrefetchRangeError } from '@edl/recordio';
import { DataReaderError } from './errors.js';
import type { ReadAheadMeter } from './read-ahead-tuning.js';

/** A range of one file, as the native prefetcher takes it. */
export interface FileRange {
  readonly path: string;
  readonly start: number;
  readonly count: number;
}

/** One enqueued range and what has arrived for it. */
interface Ticket {
  readonly id: number;
  readonly key: string;
  /** Batches routed here and not yet handed to the reader of the range. */
  readonly batches: PrefetchedBatch[];
  /** Bytes of `batches` (counted while the ticket is unclaimed). */
  bytes: number;
  /** The fault that ended the range, handed over after the batches before it. */
  error: unknown;
  /** The last batch (or the error) has arrived. */
  done: boolean;
  /** announced: waiting for its reader; claimed: being read; dropped: what arrives is discarded. */
  state: 'announced' | 'claimed' | 'dropped';
}

/** A key that tells ranges apart: equal for equal ranges. */
export const fileRangeKey = (r: FileRange): string => `${r.start}:${r.count}:${r.path}`;

/**
 * Serves several readers of ranges from one native {@link Prefetcher}, whose batches come out in
 * enqueue order: a range announced early is read ahead on the prefetcher's threads, and
 * {@link PrefetchedRanges.read} hands over exactly its batches, in order, whichever ranges were
 * queued before it. The native ring is bounded; batches pulled past while another range is read
 * first are kept here. Batches of announced ranges that nobody has claimed yet are bounded by
 * `maxUnclaimedBytes`: over it, the oldest announced range is forgotten and re-read when claimed
 * (the output never changes, only the work). A range's fault ends that range only.
 */
export class PrefetchedRanges {
  readonly #create: () => Prefetcher;
  readonly #maxUnclaimedBytes: number;
  /** Told of each batch asked for and handed over, when the read-ahead is tuned. */
  readonly #meter: ReadAheadMeter | undefined;
  /** Tickets by range id, in enqueue order. */
  readonly #tickets = new Map<number, Ticket>();
  /** Announced, unclaimed tickets by range, oldest first. */
  readonly #announced = new Map<string, Ticket[]>();
  #prefetcher: Prefetcher | undefined;
  #pulling: Promise<void> | undefined;
  #unclaimedBytes = 0;
  #closed = false;

  /**
   * @param create - makes the prefetcher, on first use (a reader that only lists shards starts no thread).
   * @param maxUnclaimedBytes - bytes of announced, unclaimed ranges kept in JavaScript.
   * @param meter - told of every batch asked for and handed over (a tuned read-ahead).
   */
  constructor(create: () => Prefetcher, maxUnclaimedBytes: number, meter?: ReadAheadMeter) {
    this.#create = create;
    this.#maxUnclaimedBytes = maxUnclaimedBytes;
    this.#meter = meter;
  }

  /** The prefetcher, once started (for its `stats`). */
  get prefetcher(): Prefetcher | undefined {
    return this.#prefetcher;
  }

  /** Queues `range` for reading ahead; a later {@link PrefetchedRanges.read} of it takes its batches. */
  announce(range: FileRange): void {
    if (this.#closed || range.count === 0) return;
    const ticket = this.#enqueue(range, 'announced');
    const list = this.#announced.get(ticket.key);
    if (list === undefined) this.#announced.set(ticket.key, [ticket]);
    else list.push(ticket);
  }

  /**
   * The batches of `range`, in order: those of the oldest announced, unclaimed range equal to it,
   * or of a range queued now. Throws the range's {@link PrefetchRangeError} after the batches before
   * the fault. Stopping early drops the rest of the range.
   */
  async *read(range: FileRange): AsyncGenerator<PrefetchedBatch> {
    if (this.#closed) throw closedError();
    if (range.count === 0) return;
    const ticket = this.#claim(range) ?? this.#enqueue(range, 'claimed');
    try {
      this.#meter?.asked();
      for (;;) {
        const batch = ticket.batches.shift();
        if (batch !== undefined) {
          this.#meter?.returned(batch);
          yield batch;
          this.#meter?.asked();
          continue;
        }
        if (ticket.error !== undefined) throw ticket.error;
        if (ticket.done) return;
        await this.#pull();
      }
    } finally {
      ticket.state = 'dropped';
      ticket.batches.length = 0;
      if (ticket.done) this.#tickets.delete(ticket.id);
    }
  }

  /** Stops the prefetcher's threads and frees what it holds. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#prefetcher?.close();
    this.#announced.clear();
    this.#unclaimedBytes = 0;
  }

  #enqueue(range: FileRange, state: Ticket['state']): Ticket {
    this.#prefetcher ??= this.#create();
    const { id } = this.#prefetcher.enqueue({ path: range.path, start: range.start, count: range.count });
    const ticket: Ticket = {
      id,
      key: fileRangeKey(range),
      batches: [],
      bytes: 0,
      error: undefined,
      done: false,
      state,
    };
    this.#tickets.set(id, ticket);
    return ticket;
  }

  #claim(range: FileRange): Ticket | undefined {
    const key = fileRangeKey(range);
    const list = this.#announced.get(key);
    const ticket = list?.shift();
    if (list !== undefined && list.length === 0) this.#announced.delete(key);
    if (ticket === undefined) return undefined;
    ticket.state = 'claimed';
    this.#unclaimedBytes -= ticket.bytes;
    ticket.bytes = 0;
    return ticket;
  }

  /** Takes one item from the prefetcher and routes it; concurrent readers share one pull. */
  #pull(): Promise<void> {
    this.#pulling ??= this.#pullOne().finally(() => {
      this.#pulling = undefined;
    });
    return this.#pulling;
  }

  async #pullOne(): Promise<void> {
    const prefetcher = this.#prefetcher;
    if (prefetcher === undefined || this.#closed) {
      this.#failAll(closedError());
      return;
    }
    let result: IteratorResult<PrefetchedBatch, undefined>;
    try {
      result = await prefetcher.next();
    } catch (error) {
      const ticket = error instanceof PrefetchRangeError ? this.#tickets.get(error.range.id) : undefined;
      if (ticket === undefined) {
        // Not tied to one range (or to one already given up): every waiting reader must hear of it.
        if (!(error instanceof PrefetchRangeError)) this.#failAll(error);
        return;
      }
      ticket.error = error;
      ticket.done = true;
      this.#settle(ticket);
      return;
    }
    if (result.done) {
      // Only close() ends a prefetcher that end() was never called on.
      this.#failAll(closedError());
      return;
    }
    const batch = result.value;
    const ticket = this.#tickets.get(batch.range.id);
    if (ticket === undefined) return;
    if (batch.rangeDone) ticket.done = true;
    if (ticket.state !== 'dropped') {
      ticket.batches.push(batch);
      if (ticket.state === 'announced') {
        ticket.bytes += batch.data.byteLength;
        this.#unclaimedBytes += batch.data.byteLength;
        this.#evict();
      }
    }
    this.#settle(ticket);
  }

  /** Forgets a finished ticket that nobody will read. */
  #settle(ticket: Ticket): void {
    if (ticket.done && ticket.state === 'dropped') this.#tickets.delete(ticket.id);
  }

  /** Drops the oldest announced ranges' batches until the unclaimed ones fit the bound. */
  #evict(): void {
    for (const ticket of this.#tickets.values()) {
      if (this.#unclaimedBytes <= this.#maxUnclaimedBytes) return;
      if (ticket.state !== 'announced') continue;
      const list = this.#announced.get(ticket.key);
      const at = list?.indexOf(ticket) ?? -1;
      if (list !== undefined && at >= 0) list.splice(at, 1);
      if (list !== undefined && list.length === 0) this.#announced.delete(ticket.key);
      this.#unclaimedBytes -= ticket.bytes;
      ticket.bytes = 0;
      ticket.state = 'dropped';
      ticket.batches.length = 0;
      this.#settle(ticket);
    }
  }

  #failAll(error: unknown): void {
    for (const ticket of this.#tickets.values()) {
      if (!ticket.done) {
        ticket.error = error;
        ticket.done = true;
      }
    }
  }
}

function closedError(): DataReaderError {
  return new DataReaderError('CLOSED', 'the RecordIO reader was closed while reading ahead');
}
