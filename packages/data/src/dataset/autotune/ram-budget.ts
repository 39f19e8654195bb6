import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import path from 'node:path';
import { invalidArgument } from '@edl/common';

/**
 * Share of the host's memory (or of the container's cgroup limit, when lower) that the data
 * pipelines of one host may hold by default: half, as tf.data's AUTOTUNE assumes.
 */
export const DEFAULT_RAM_SHARE = 0.5;

/** A cgroup v1 limit at or above this means "no limit" (the kernel writes a page-rounded 2^63 - 1). */
const V1_UNLIMITED = 2 ** 60;

/**
 * The memory limit of the cgroup this process runs in, or undefined when there is none: cgroup v2's
 * `memory.max` of the process's own group (then of the root the container sees), else cgroup v1's
 * `memory/memory.limit_in_bytes`. `root` is the cgroup mount (a test points it at a directory of
 * its own); files that do not exist or do not parse count as no limit.
 */
export function cgroupMemoryLimit(
  root = '/sys/fs/cgroup',
  procSelfCgroup = '/proc/self/cgroup',
): number | undefined {
  const v2Dirs = [root];
  const own = readText(procSelfCgroup)
    ?.split('\n')
    .find((line) => line.startsWith('0::'))
    ?.slice(3)
    .trim();
  if (own !== undefined && own !== '/' && own !== '') v2Dirs.unshift(path.join(root, own));
  for (const dir of v2Dirs) {
    const text = readText(path.join(dir, 'memory.max'))?.trim();
    if (text === undefined) continue;
    if (text === 'max') return undefined;
    const bytes = Number(text);
    if (Number.isSafeInteger(bytes) && bytes > 0) return bytes;
  }
  const v1 = Number(readText(path.join(root, 'memory', 'memory.limit_in_bytes'))?.trim());
  return Number.isFinite(v1) && v1 > 0 && v1 < V1_UNLIMITED ? v1 : undefined;
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** The memory the processes of this host may use: the lower of physical memory and the cgroup limit. */
export function hostMemoryBytes(): number {
  const limit = cgroupMemoryLimit();
  return limit === undefined ? totalmem() : Math.min(totalmem(), limit);
}

/** What a host's data budget is split between. */
export interface BudgetShare {
  /** Processes of this host that run data pipelines and share the budget (default 1). */
  readonly processes?: number;
}

/**
 * The default data RAM budget of one process: {@link DEFAULT_RAM_SHARE} of {@link hostMemoryBytes},
 * divided by the processes of the host that share it (`edl train` runs all its workers on one host).
 */
export function defaultDataRamBudget(share: BudgetShare = {}): number {
  const processes = Math.max(1, Math.floor(share.processes ?? 1));
  return Math.floor((hostMemoryBytes() * DEFAULT_RAM_SHARE) / processes);
}

/**
 * The default CPU budget of one process: its share of the host's cores less one, which its main
 * thread needs (it reads, hands elements to threads and runs the consumer's step), at least 1.
 */
export function defaultCpuBudget(share: BudgetShare = {}): number {
  const processes = Math.max(1, Math.floor(share.processes ?? 1));
  return Math.max(1, Math.floor(availableParallelism() / processes) - 1);
}

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  m: 1e6,
  mb: 1e6,
  g: 1e9,
  gb: 1e9,
  t: 1e12,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/**
 * Parses a byte size such as `512MiB`, `2GiB`, `1.5G` or `1048576` (decimal units are powers of
 * 1000, binary ones of 1024), or a share of the host's memory such as `25%`.
 *
 * @throws TypeError naming `name` for anything else, or a size under 1 MiB.
 */
export function parseByteSize(text: string, name: string, memoryBytes = hostMemoryBytes()): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(%|[a-zA-Z]*)\s*$/.exec(text);
  const unit = match?.[2]?.toLowerCase();
  const factor = unit === '%' ? memoryBytes / 100 : unit === undefined ? undefined : UNITS[unit];
  const bytes = match === null || factor === undefined ? Number.NaN : Math.floor(Number(match[1]) * factor);
  if (!Number.isSafeInteger(bytes) || bytes < 2 ** 20)
    invalidArgument("a size of at least 1 MiB such as '512MiB', '2GiB' or '25%'", name, text);
  return bytes;
}
