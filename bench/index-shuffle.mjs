/**
 * Global index shuffle: nanoseconds per index of IndexShuffler.get (a Feistel network over a domain
 * 2^h * m just above n, with cycle walking) for n from 10^6 to 2^53 - 1, against baselines measured
 * in the same run: a bare Math.imul hash of the index (the cost floor of any computed mapping), a
 * lookup in a materialized Uint32Array permutation (what a shuffle costs when the permutation fits
 * in memory; 4 bytes per element, impossible for the large domains), and the textbook design with
 * the same round function over the next power of two (`pow2Shuffler` below), whose walk takes two
 * passes on average at n = 2^k + 1.
 *
 * EDL_BENCH_INDICES (default 4000000) indices per measurement, EDL_BENCH_REPEAT (default 5) rounds;
 * the best round is kept.
 */
import os from 'node:os';
import { feistelDomain, IndexShuffler } from '@edl/data';
import { machineLine } from './lib/machine.mjs';

const INDICES = Number(process.env.EDL_BENCH_INDICES ?? 4_000_000);
const REPEAT = Number(process.env.EDL_BENCH_REPEAT ?? 5);
const DOMAINS = [
  ['10^6', 1_000_000],
  ['2^20', 2 ** 20],
  ['2^20 + 1', 2 ** 20 + 1],
  ['2^32 + 1', 2 ** 32 + 1],
  ['2^40', 2 ** 40],
  ['2^40 + 1', 2 ** 40 + 1],
  ['2^53 - 1', 2 ** 53 - 1],
];

/** Best ns per index over REPEAT rounds of fn(0 .. count-1); results are summed so the JIT keeps them. */
function measure(fn, count = INDICES) {
  let best = Number.POSITIVE_INFINITY;
  let sink = 0;
  for (let round = 0; round < REPEAT; round++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < count; i++) sink += fn(i);
    const ns = Number(process.hrtime.bigint() - t0) / count;
    best = Math.min(best, ns);
  }
  if (sink === -1) console.log('unreachable');
  return best;
}

function fmix32(x) {
  let h = x | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The same 4-round Feistel network over the next power of two, with cycle walking. */
function pow2Shuffler(n) {
  let bits = 0;
  while (2 ** bits < n) bits++;
  const lowBits = bits - (bits >>> 1);
  const scale = 2 ** lowBits;
  const lowMask = scale - 1;
  const highMask = 2 ** (bits >>> 1) - 1;
  const lengthHigh = Math.floor(n / scale);
  const lengthLow = n - lengthHigh * scale;
  const [k0, k1, k2, k3] = [0x2545f491, 0x6c8e9cf5, 0x1b873593, 0x4f6cdd1d];
  const round = (half, key) => {
    let h = Math.imul(half ^ key, 0x9e3779b1);
    h ^= h >>> 15;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    return h ^ (h >>> 16);
  };
  return (index) => {
    let high = Math.floor(index / scale);
    let low = index - high * scale;
    do {
      high ^= round(low, k0) & highMask;
      low ^= round(high, k1) & lowMask;
      high ^= round(low, k2) & highMask;
      low ^= round(high, k3) & lowMask;
    } while (high > lengthHigh || (high === lengthHigh && low >= lengthLow));
    return high * scale + low;
  };
}

// A materialized permutation of 2^22 elements (Fisher-Yates), read at shuffled positions.
const TABLE_SIZE = 2 ** 22;
const table = new Uint32Array(TABLE_SIZE);
for (let i = 0; i < TABLE_SIZE; i++) table[i] = i;
for (let i = TABLE_SIZE - 1, s = 12345; i > 0; i--) {
  s = fmix32(s + 0x9e3779b9);
  const j = s % (i + 1);
  const t = table[i];
  table[i] = table[j];
  table[j] = t;
}
const mask = TABLE_SIZE - 1;

console.log(`# index-shuffle: ${machineLine()}`);
console.log(
  `# ${INDICES} indices per measurement, best of ${REPEAT}; load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
const hashNs = measure((i) => fmix32(i));
const tableNs = measure((i) => table[table[i & mask]]);
console.log(`baseline Math.imul hash (fmix32):          ${hashNs.toFixed(2)} ns/index`);
console.log(`baseline Uint32Array permutation lookup:   ${tableNs.toFixed(2)} ns/index (2^22 table, 16 MiB)`);
console.log('');
console.log(
  '| n | ns/index | passes | x hash | x table lookup | next-power-of-two design: ns/index | passes |',
);
console.log('|---|---|---|---|---|---|---|');
const rows = [];
for (const [label, n] of DOMAINS) {
  const shuffler = new IndexShuffler(n, 42);
  const pow2 = pow2Shuffler(n);
  // Large domains are measured on a run of indices from their middle.
  const count = Math.min(INDICES, n);
  const start = n > INDICES ? Math.floor(n / 3) : 0;
  const ns =
    start === 0 ? measure((i) => shuffler.get(i), count) : measure((i) => shuffler.get(start + i), count);
  const pow2Ns = start === 0 ? measure((i) => pow2(i), count) : measure((i) => pow2(start + i), count);
  const { highBits, modulus } = feistelDomain(n);
  let bits = 0;
  while (2 ** bits < n) bits++;
  // Expected cycle-walk passes: size of the permuted domain over n.
  const passes = (2 ** highBits * modulus) / n;
  const pow2Passes = 2 ** bits / n;
  rows.push(ns);
  console.log(
    `| ${label} | ${ns.toFixed(2)} | ${passes.toFixed(3)} | ${(ns / hashNs).toFixed(1)} | ${(ns / tableNs).toFixed(1)} | ${pow2Ns.toFixed(2)} | ${pow2Passes.toFixed(2)} |`,
  );
}
console.log('');
console.log(`worst case ${Math.max(...rows).toFixed(2)} ns/index (target <= 50)`);
