/**
 * `--s3-endpoint` and `--s3-anonymous`: how every command that reads or writes `s3://` locations
 * reaches the store. Checked with the other options, applied before anything is read.
 */
import type { OptionSpecs } from '../args.js';
import { UsageError } from '../command.js';

/** The options, to spread into a command's option spec. */
export const S3_OPTION_SPEC = {
  's3-endpoint': { type: 'string' },
  's3-anonymous': { type: 'boolean' },
} as const satisfies OptionSpecs;

/** Their help text, shared by the commands' usages. */
export const S3_OPTIONS_HELP = `Object storage (s3:// locations):
  --s3-endpoint URL             S3 API endpoint of an S3-compatible store (MinIO, Ceph RGW, R2,
                                GCS's XML API), with path-style addressing; passed to the workers
                                as AWS_ENDPOINT_URL_S3 (default: AWS_ENDPOINT_URL_S3, else
                                AWS_ENDPOINT_URL, else AWS). Credentials: the AWS default chain
                                (AWS_ACCESS_KEY_ID..., AWS_PROFILE, web identity, instance roles)
  --s3-anonymous                unsigned requests, for public buckets (no credentials looked up)`;

/** The checked S3 options. */
export interface S3Options {
  /** The S3 API endpoint (`http(s)://host[:port]`). */
  readonly s3Endpoint?: string;
  /** Send unsigned requests. */
  readonly s3Anonymous: boolean;
}

/** Checks the S3 options of parsed `values` (a command's, with {@link S3_OPTION_SPEC} spread in). */
export function s3Options(values: { readonly [name: string]: unknown }): S3Options {
  const endpoint = values['s3-endpoint'];
  const anonymous = values['s3-anonymous'] === true;
  if (endpoint === undefined) return { s3Anonymous: anonymous };
  const text = String(endpoint);
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '') {
    throw new UsageError(
      `Expected an http:// or https:// URL without credentials for --s3-endpoint but received '${text.replace(/\/\/[^/@]*@/, '//...@')}'`,
    );
  }
  return { s3Endpoint: text, s3Anonymous: anonymous };
}

/** The command-line flags that give another `edl` process (a worker) the same S3 options. */
export function s3Args(options: S3Options): string[] {
  return [
    ...(options.s3Endpoint === undefined ? [] : ['--s3-endpoint', options.s3Endpoint]),
    ...(options.s3Anonymous ? ['--s3-anonymous'] : []),
  ];
}

/**
 * Makes the S3 options this process's S3 settings (@edl/storage's `configureS3`), and sets
 * `AWS_ENDPOINT_URL_S3` for the processes it starts (local workers inherit the environment). Without
 * either option, nothing changes: the AWS SDK's own configuration applies.
 */
export async function applyS3Options(
  options: S3Options,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  if (options.s3Endpoint === undefined && !options.s3Anonymous) return;
  if (options.s3Endpoint !== undefined) env.AWS_ENDPOINT_URL_S3 = options.s3Endpoint;
  const { configureS3 } = await import('@edl/storage');
  configureS3({
    ...(options.s3Endpoint === undefined ? {} : { endpoint: options.s3Endpoint }),
    ...(options.s3Anonymous ? { anonymous: true } : {}),
  });
}
