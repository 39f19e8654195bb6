import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  cgroupMemoryLimit,
  defaultCpuBudget,
  defaultDataRamBudget,
  hostMemoryBytes,
  parseByteSize,
} from '../../../src/dataset/autotune/ram-budget.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A cgroup mount of our own: `files` relative to it, and a /proc/self/cgroup naming `group`. */
function fakeCgroup(files: Record<string, string>, group = '/'): { root: string; self: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'edl-cgroup-'));
  dirs.push(dir);
  const root = path.join(dir, 'cgroup');
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  const self = path.join(dir, 'self-cgroup');
  writeFileSync(self, `0::${group}\n`);
  return { root, self };
}

describe('cgroupMemoryLimit', () => {
  it("reads cgroup v2's memory.max of the process's own group first", () => {
    const { root, self } = fakeCgroup(
      { 'memory.max': '8589934592\n', 'job/w1/memory.max': '2147483648\n' },
      '/job/w1',
    );
    expect(cgroupMemoryLimit(root, self)).toBe(2 ** 31);
  });

  it("treats v2's 'max' as no limit", () => {
    const { root, self } = fakeCgroup({ 'memory.max': 'max\n' });
    expect(cgroupMemoryLimit(root, self)).toBeUndefined();
  });

  it("falls back to cgroup v1's memory.limit_in_bytes, whose huge value means no limit", () => {
    const v1 = fakeCgroup({ 'memory/memory.limit_in_bytes': '1073741824\n' });
    expect(cgroupMemoryLimit(v1.root, v1.self)).toBe(2 ** 30);
    const unlimited = fakeCgroup({ 'memory/memory.limit_in_bytes': '9223372036854771712\n' });
    expect(cgroupMemoryLimit(unlimited.root, unlimited.self)).toBeUndefined();
  });

  it('is undefined without a cgroup file', () => {
    const { root, self } = fakeCgroup({});
    expect(cgroupMemoryLimit(root, self)).toBeUndefined();
  });
});

describe('defaultDataRamBudget', () => {
  it("is half of the host's memory (or of this container's limit), split between the host's processes", () => {
    expect(hostMemoryBytes()).toBeLessThanOrEqual(totalmem());
    expect(defaultDataRamBudget()).toBe(Math.floor(hostMemoryBytes() / 2));
    expect(defaultDataRamBudget({ processes: 4 })).toBe(Math.floor(hostMemoryBytes() / 8));
  });
});

describe('defaultCpuBudget', () => {
  it("is the process's share of the cores less its main thread's, at least 1", () => {
    expect(defaultCpuBudget()).toBe(Math.max(1, availableParallelism() - 1));
    expect(defaultCpuBudget({ processes: 1000 })).toBe(1);
  });
});

describe('parseByteSize', () => {
  it('reads binary and decimal units and shares of memory', () => {
    expect(parseByteSize('512MiB', 'x')).toBe(512 * 2 ** 20);
    expect(parseByteSize('2GiB', 'x')).toBe(2 ** 31);
    expect(parseByteSize('1.5G', 'x')).toBe(1.5e9);
    expect(parseByteSize('1048576', 'x')).toBe(2 ** 20);
    expect(parseByteSize('25%', 'x', 2 ** 34)).toBe(2 ** 32);
  });

  it('names the option in its error', () => {
    expect(() => parseByteSize('lots', '--data-ram-budget')).toThrow(/--data-ram-budget/);
    expect(() => parseByteSize('10KiB', '--data-ram-budget')).toThrow(/at least 1 MiB/);
  });
});
