import { createRequire } from 'node:module';
import { type EnvProxyAgents, envProxyAgents, proxyVariablesSet } from '../proxy/env-proxy.js';
import { RemoteError } from '../remote/remote-error.js';

/** The two optional AWS SDK v3 modules an S3 source uses, loaded on first use. */
export interface S3Sdk {
  readonly client: typeof import('@aws-sdk/client-s3');
  readonly credentialProviders: typeof import('@aws-sdk/credential-providers');
  /**
   * The agents that honour `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY`, when one of the proxy
   * variables was set at load (the SDK's own NodeHttpHandler ignores them).
   */
  readonly proxyAgents: EnvProxyAgents | undefined;
}

let loading: Promise<S3Sdk> | undefined;

/**
 * Imports `@aws-sdk/client-s3` and `@aws-sdk/credential-providers` (optional peer dependencies of
 * @edl/storage: only `s3://` locations need them), once per process. `location` is what the user
 * asked for, named in the error when a package is missing.
 *
 * Before the first import it sets `AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED=true` unless the
 * variable is already set: the SDK's own switch (read by `emitWarningIfUnsupportedVersion` in
 * `@aws-sdk/core`) for the `NodeVersionSupportWarning` it otherwise prints to stderr on Node < 22 the
 * first time a client is built. Users who want the warning set the variable to `false`.
 */
export function loadS3Sdk(location: string): Promise<S3Sdk> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  loading ??= importSdk();
  return loading.catch((error: unknown) => {
    loading = undefined;
    throw new RemoteError(
      'MISSING_DEPENDENCY',
      `reading s3:// locations needs the npm packages @aws-sdk/client-s3 and @aws-sdk/credential-providers ` +
        `(npm install @aws-sdk/client-s3 @aws-sdk/credential-providers): ${describeImportFailure(error)}`,
      { url: location, cause: error },
    );
  });
}

const requireOptional = createRequire(import.meta.url);

async function importSdk(): Promise<S3Sdk> {
  // require, not import(): both load the SDK's CommonJS build (it has no ESM entry for Node), but
  // import() first scans the modules for their export names, about 50 ms of CPU in every process
  // that reads s3:// (measured in docs/data-readers.md, "Reader CPU").
  const client = requireOptional('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  const credentialProviders = requireOptional(
    '@aws-sdk/credential-providers',
  ) as typeof import('@aws-sdk/credential-providers');
  const proxyAgents = proxyVariablesSet() ? await envProxyAgents() : undefined;
  return { client, credentialProviders, proxyAgents };
}

function describeImportFailure(error: unknown): string {
  return error instanceof Error ? (error.message.split('\n')[0] ?? error.message) : String(error);
}

/**
 * Whether the environment names an S3 endpoint the SDK will use by itself (`AWS_ENDPOINT_URL_S3`,
 * else `AWS_ENDPOINT_URL`, unless `AWS_IGNORE_CONFIGURED_ENDPOINT_URLS` is true). The SDK reads these
 * variables itself (`@smithy/core`'s `getEndpointUrlConfig`), so they are never passed to it again;
 * they are read here only to choose path-style addressing, which S3-compatible stores need.
 */
export function environmentNamesS3Endpoint(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.AWS_IGNORE_CONFIGURED_ENDPOINT_URLS?.toLowerCase() === 'true') return false;
  return Boolean(env.AWS_ENDPOINT_URL_S3) || Boolean(env.AWS_ENDPOINT_URL);
}
