import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';

const run = promisify(execFile);

/** A test CA's certificate file, and a server key and certificate it signs. */
export interface TestCertificates {
  /** The CA's certificate (PEM), what NODE_EXTRA_CA_CERTS names. */
  readonly caFile: string;
  readonly key: string;
  readonly cert: string;
}

/**
 * A test CA and a server certificate it signs for 127.0.0.1 and localhost, made in `directory`
 * with the openssl CLI. Each call makes a new CA, so a second call's CA does not trust the first's
 * certificate.
 */
export async function makeCertificates(directory: string): Promise<TestCertificates> {
  const file = (name: string): string => join(directory, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=ElasticDL test CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  await run('openssl', [
    'req',
    ...ec,
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
    '-subj',
    '/CN=127.0.0.1',
  ]);
  await writeFile(
    file('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
  );
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    file('server.ext'),
    '-out',
    file('server.pem'),
  ]);
  return {
    caFile: file('ca.pem'),
    key: await readFile(file('server.key'), 'utf8'),
    cert: await readFile(file('server.pem'), 'utf8'),
  };
}

/** How a child process ended. */
export interface ChildOutcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs the ES module `script` in a fresh Node process with `args` and `env`: Node reads
 * NODE_EXTRA_CA_CERTS only at start, so reads that trust a test CA run in a child.
 */
export function runModuleInChild(
  script: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<ChildOutcome> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script, ...args],
      { env, timeout: 60_000 },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : Number(error.code ?? -1), stdout, stderr });
      },
    );
  });
}

/**
 * The one stderr line of a child that failed as a read should: exit status 1, nothing on stdout,
 * exactly one line on stderr naming `url`.
 */
export function failureLine(outcome: ChildOutcome, url: string): string {
  expect(outcome.code).toBe(1);
  expect(outcome.stdout).toBe('');
  const lines = outcome.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(url);
  return lines[0] as string;
}

/** The parent's environment without any CA bundle, proxy or direct-ranges switch of its own. */
export function childBaseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of [
    'NODE_EXTRA_CA_CERTS',
    'HTTPS_PROXY',
    'https_proxy',
    'HTTP_PROXY',
    'http_proxy',
    'EDL_S3_DIRECT_RANGES',
  ]) {
    delete env[name];
  }
  return env;
}
