import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const bin = join(packageDir, 'node_modules', '.bin');

describe('generated code', () => {
  const outDir = mkdtempSync(join(tmpdir(), 'edl-proto-gen-'));
  afterAll(() => rmSync(outDir, { recursive: true, force: true }));

  it('is exactly what protoc-gen-es makes of master.proto and the TensorFlow protos today (never edited by hand, never stale)', () => {
    const template = join(outDir, 'buf.gen.yaml');
    writeFileSync(
      template,
      readFileSync(join(packageDir, 'buf.gen.yaml'), 'utf8').replace(
        'out: src/generated',
        `out: ${outDir}/gen`,
      ),
    );
    execFileSync(join(bin, 'buf'), ['generate', '--template', template], {
      cwd: packageDir,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` },
    });
    for (const file of [
      ['edl', 'v1', 'master_pb.ts'],
      ['tensorflow', 'core', 'example', 'example_pb.ts'],
      ['tensorflow', 'core', 'example', 'feature_pb.ts'],
    ]) {
      const fresh = readFileSync(join(outDir, 'gen', ...file), 'utf8');
      const committed = readFileSync(join(packageDir, 'src', 'generated', ...file), 'utf8');
      expect(committed, file.join('/')).toBe(fresh);
    }
  });

  it('passes buf lint', () => {
    expect(() => execFileSync(join(bin, 'buf'), ['lint'], { cwd: packageDir, stdio: 'pipe' })).not.toThrow();
  });
});
