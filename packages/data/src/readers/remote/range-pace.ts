import { RANGES_AHEAD_UNMEASURED } from '../../read-ahead.js';

/** The most ranges a reader asks to have announced ahead (a consumer's own cap may be lower). */
export const MAX_RANGES_WANTED = 64;
/**
 * Weights of the newest sample in the moving averages: a sample that asks for more ranges ahead
 * (a slower fetch, a faster consumer) counts for half, one that asks for fewer for a fifth (about
 * the last ten count). Announcing a few ranges too many for a moment costs little; too few stalls
 * the consumer, which is what the read-ahead is for.
 */
const WEIGHT_TOWARDS_MORE = 0.5;
const WEIGHT_TOWARDS_FEWER = 0.2;
/** Headroom over Little's law, for fetch times that vary from one GET to the next. */
const HEADROOM = 1.5;

/**
 * How many ranges a remote reader wants announced ahead of the one it reads, by Little's law: to
 * read ranges at the pace the consumer reads them while each takes `fetch` seconds to arrive, about
 * `fetch / interval` of them must be on their way, where the interval is the consumer's own time
 * per range (waits for bytes left out). A fast consumer of small objects behind a slow
 * link wants many (64 files of 1 MiB at 50 ms want about 30); a training job that takes a second
 * per task wants one or two, so it does not lease the tail of an epoch that other workers could
 * train. Before a fetch and two reads are measured it wants {@link RANGES_AHEAD_UNMEASURED}.
 *
 * The same reasoning sizes tf.data's AUTOTUNE prefetch buffers (`core/framework/model.h`): the
 * buffer that hides a producer's latency at the consumer's rate.
 */
export class RangePace {
  /** Moving average of a piece's fetch, from its GET's start to its last byte, in seconds. */
  #fetchSeconds: number | undefined;
  /**
   * Moving average of the consumer's own time per range: between the starts of consecutive range
   * reads, less the time the read waited for its bytes (a consumer held up by fetches would
   * otherwise look slow, and be given fewer ranges ahead, which holds it up more).
   */
  #intervalSeconds: number | undefined;
  #lastReadAt: number | undefined;
  #waitedSinceLastRead = 0;
  readonly #now: () => number;

  /** @param now - the clock in seconds (a test's own, or `performance.now() / 1000`). */
  constructor(now: () => number = () => performance.now() / 1000) {
    this.#now = now;
  }

  /** A piece's GET took `seconds` from its start to its last byte. */
  fetched(seconds: number): void {
    this.#fetchSeconds = average(this.#fetchSeconds, seconds, seconds > (this.#fetchSeconds ?? 0));
  }

  /** The read in progress waited `seconds` for a piece's bytes. */
  waited(seconds: number): void {
    this.#waitedSinceLastRead += seconds;
  }

  /** A read of a range starts now. */
  readStarted(): void {
    const now = this.#now();
    if (this.#lastReadAt !== undefined) {
      const own = Math.max(0, now - this.#lastReadAt - this.#waitedSinceLastRead);
      this.#intervalSeconds = average(this.#intervalSeconds, own, own < (this.#intervalSeconds ?? 0));
    }
    this.#lastReadAt = now;
    this.#waitedSinceLastRead = 0;
  }

  /** Ranges wanted ahead now: between 1 and {@link MAX_RANGES_WANTED}. */
  get wanted(): number {
    if (this.#fetchSeconds === undefined || this.#intervalSeconds === undefined)
      return RANGES_AHEAD_UNMEASURED;
    const needed = Math.ceil((HEADROOM * this.#fetchSeconds) / Math.max(this.#intervalSeconds, 1e-6));
    return Math.min(MAX_RANGES_WANTED, Math.max(1, needed + 1));
  }

  /** The averages behind {@link wanted} (what its tests check). */
  get measured(): { readonly fetchSeconds?: number; readonly intervalSeconds?: number } {
    return {
      ...(this.#fetchSeconds === undefined ? {} : { fetchSeconds: this.#fetchSeconds }),
      ...(this.#intervalSeconds === undefined ? {} : { intervalSeconds: this.#intervalSeconds }),
    };
  }
}

function average(previous: number | undefined, sample: number, towardsMore: boolean): number {
  if (previous === undefined) return sample;
  return previous + (towardsMore ? WEIGHT_TOWARDS_MORE : WEIGHT_TOWARDS_FEWER) * (sample - previous);
}
