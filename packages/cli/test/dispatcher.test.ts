import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runCli } from '../src/main.js';

function capture() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const chunks = { out: '', err: '' };
  stdout.on('data', (c: Buffer) => {
    chunks.out += c.toString();
  });
  stderr.on('data', (c: Buffer) => {
    chunks.err += c.toString();
  });
  return { io: { stdout, stderr, stdin: new PassThrough(), isTTY: false }, chunks };
}

describe('edl dispatcher', () => {
  it('lists every command with its summary', async () => {
    const { io, chunks } = capture();
    expect(await runCli(['--help'], io)).toBe(0);
    for (const name of ['recordio', 'master', 'train', 'evaluate', 'predict', 'demo', 'worker', 'k8s']) {
      expect(chunks.out).toMatch(new RegExp(`^  ${name} +\\S.+$`, 'm'));
    }
  });

  it('rejects an unknown command with exit status 2 and the usage', async () => {
    const { io, chunks } = capture();
    expect(await runCli(['trian'], io)).toBe(2);
    expect(chunks.err.split('\n')[0]).toBe("edl: unknown command 'trian'");
    expect(chunks.err).toContain('Usage: edl <command> [options]');
  });

  it('prints usage with exit status 2 when no command is given', async () => {
    const { io, chunks } = capture();
    expect(await runCli([], io)).toBe(2);
    expect(chunks.out).toContain('Commands:');
  });

  it("prints a command's own usage for --help without running it", async () => {
    const { io, chunks } = capture();
    expect(await runCli(['recordio', '--help'], io)).toBe(0);
    expect(chunks.out).toContain('edl recordio inspect');
    expect(chunks.err).toBe('');
  });
});
