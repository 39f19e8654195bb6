import { describe, expect, it } from 'vitest';
import { RANGES_AHEAD_UNMEASURED, wantsAnotherRangeAhead } from '../../src/read-ahead.js';
import { MAX_RANGES_WANTED, RangePace } from '../../src/readers/remote/range-pace.js';

// The pace of a remote reader (how many ranges it wants announced ahead, by Little's law), driven
// with a clock the test sets, and the policy consumers apply to it.

/** A pace on a clock the test moves; `read(ownSeconds, waitedSeconds)` consumes one range. */
function pacedReader() {
  let now = 0;
  const pace = new RangePace(() => now);
  return {
    pace,
    read(ownSeconds: number, waitedSeconds = 0): void {
      pace.readStarted();
      pace.waited(waitedSeconds);
      now += ownSeconds + waitedSeconds;
    },
  };
}

describe('RangePace', () => {
  it('wants the initial count until a fetch and two reads are measured', () => {
    const { pace, read } = pacedReader();
    expect(pace.wanted).toBe(RANGES_AHEAD_UNMEASURED);
    read(0.001);
    pace.fetched(0.06);
    expect(pace.wanted).toBe(RANGES_AHEAD_UNMEASURED);
    read(0.001);
    expect(pace.wanted).not.toBe(RANGES_AHEAD_UNMEASURED);
  });

  it('wants fetch / interval ranges with headroom: many for a fast consumer of slow fetches, few for a training job', () => {
    const fast = pacedReader();
    for (let i = 0; i < 20; i++) {
      fast.pace.fetched(0.06);
      fast.read(0.005);
    }
    // 1.5 * 60 ms / 5 ms + 1.
    expect(fast.pace.wanted).toBe(19);

    const training = pacedReader();
    for (let i = 0; i < 20; i++) {
      training.pace.fetched(0.06);
      training.read(1);
    }
    expect(training.pace.wanted).toBe(2);
  });

  it('leaves the waits for bytes out of the interval: a consumer held up by fetches is not taken for a slow one', () => {
    const { pace, read } = pacedReader();
    for (let i = 0; i < 20; i++) {
      pace.fetched(0.2);
      // 2 ms of its own per range, 50 ms waiting for the range's bytes.
      read(0.002, 0.05);
    }
    expect(pace.wanted).toBe(MAX_RANGES_WANTED);
    expect(pace.measured.intervalSeconds).toBeCloseTo(0.002, 6);
  });

  it('stays within 1 and the maximum', () => {
    const { pace, read } = pacedReader();
    for (let i = 0; i < 5; i++) {
      pace.fetched(10);
      read(0);
    }
    expect(pace.wanted).toBe(MAX_RANGES_WANTED);
    const slow = pacedReader();
    for (let i = 0; i < 5; i++) {
      slow.pace.fetched(0);
      slow.read(5);
    }
    expect(slow.pace.wanted).toBe(1);
  });
});

describe('wantsAnotherRangeAhead', () => {
  const reader = (wantedRanges: number | undefined, announcedBytes = 0) => ({
    prefetch: () => undefined,
    readAheadBudget: () => ({
      budgetBytes: 100,
      announcedBytes,
      ...(wantedRanges === undefined ? {} : { wantedRanges }),
    }),
  });

  it("holds as many ranges as the reader wants, within the consumer's cap and the budget", () => {
    expect(wantsAnotherRangeAhead(reader(3), 2)).toBe(true);
    expect(wantsAnotherRangeAhead(reader(3), 3)).toBe(false);
    expect(wantsAnotherRangeAhead(reader(40), 39)).toBe(true);
    expect(wantsAnotherRangeAhead(reader(40), 39, 8)).toBe(false);
    expect(wantsAnotherRangeAhead(reader(40, 100), 0)).toBe(false);
  });

  it('holds 16 for a reader with a budget that does not say, and one for a reader without a budget', () => {
    expect(wantsAnotherRangeAhead(reader(undefined), 15)).toBe(true);
    expect(wantsAnotherRangeAhead(reader(undefined), 16)).toBe(false);
    expect(wantsAnotherRangeAhead({ prefetch: () => undefined }, 0)).toBe(true);
    expect(wantsAnotherRangeAhead({ prefetch: () => undefined }, 1)).toBe(false);
  });
});
