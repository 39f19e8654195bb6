import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type S3Admin, s3Admin } from './s3-admin.js';

const require = createRequire(import.meta.url);

/** The key pair s3rver knows (its built-in account); it checks the key id, not the secret. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

/** A running s3rver process on 127.0.0.1 with its own data folder. */
export interface S3rverProcess extends S3Admin {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** s3rver's version, from its package.json. */
  readonly version: string;
  /** Stops the process and removes its data. */
  stop(): Promise<void>;
}

/** Options of {@link startS3rver}. */
export interface S3rverOptions {
  /**
   * Access key ids s3rver accepts besides its built-in `S3RVER` (its CLI has no option for them:
   * they are registered on its account model by `s3rver-access-keys.cjs`, preloaded with `--require`).
   */
  readonly accessKeyIds?: readonly string[];
}

/** Starts npm's s3rver as a child process (its own CLI) on a free port of 127.0.0.1. */
export async function startS3rver(options: S3rverOptions = {}): Promise<S3rverProcess> {
  // The SDK's own switch for its Node-version warning, as S3ByteSource sets it for users.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const packageJson = require.resolve('s3rver/package.json');
  const { version } = JSON.parse(await readFile(packageJson, 'utf8')) as { version: string };
  const directory = await mkdtemp(join(tmpdir(), 'edl-s3rver-'));
  const child = spawn(
    process.execPath,
    // s3rver's ListObjectsV2 continuation tokens are DES-encrypted: OpenSSL 3 has DES only in its legacy provider.
    [
      '--openssl-legacy-provider',
      ...(options.accessKeyIds === undefined
        ? []
        : ['--require', fileURLToPath(new URL('./s3rver-access-keys.cjs', import.meta.url))]),
      join(dirname(packageJson), 'bin', 's3rver.js'),
      '-d',
      directory,
      '-a',
      '127.0.0.1',
      '-p',
      '0',
      '-s',
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, EDL_S3RVER_ACCESS_KEY_IDS: (options.accessKeyIds ?? []).join(',') },
    },
  );
  const port = await listeningPort(child);
  const endpoint = `http://127.0.0.1:${port}`;
  const admin = s3Admin(endpoint, S3RVER_CREDENTIALS);
  return {
    ...admin,
    endpoint,
    version,
    async stop() {
      admin.admin.destroy();
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await rm(directory, { recursive: true, force: true });
    },
  };
}

function listeningPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`s3rver did not start within 20 s: ${output}`)), 20_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = /listening on [\d.]+:(\d+)/.exec(output);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited with ${code}: ${output}`));
    });
  });
}
