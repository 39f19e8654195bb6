import { fileURLToPath } from 'node:url';
import { defineProject } from 'vitest/config';

const packagesDir = fileURLToPath(new URL('./packages/', import.meta.url));
const workspacePackages = [
  'common',
  'storage',
  'recordio',
  'data',
  'proto',
  'ps',
  'master',
  'worker',
  'cli',
  'model-zoo',
];

/**
 * Vitest project settings shared by every package: workspace imports resolve to TypeScript sources,
 * so unit tests never run against a stale dist/. Tests that spawn processes use the built dist/.
 */
export function packageProject(name: string, testTimeoutMs = 30_000) {
  return defineProject({
    resolve: {
      alias: [
        // Subpath exports first: the package aliases below match whole names only.
        { find: /^@edl\/master\/kubernetes$/, replacement: `${packagesDir}master/src/kubernetes/index.ts` },
        {
          find: /^@edl\/master\/local-workers$/,
          replacement: `${packagesDir}master/src/local-instance-manager.ts`,
        },
        { find: /^@edl\/data\/dataset$/, replacement: `${packagesDir}data/src/dataset/index.ts` },
        { find: /^@edl\/proto\/grpc$/, replacement: `${packagesDir}proto/src/grpc.ts` },
        { find: /^@edl\/data\/readers$/, replacement: `${packagesDir}data/src/readers/index.ts` },
        { find: /^@edl\/model-zoo\/zoo$/, replacement: `${packagesDir}model-zoo/src/zoo.ts` },
        {
          find: /^@edl\/worker\/backend-name$/,
          replacement: `${packagesDir}worker/src/backends/backend-name.ts`,
        },
        ...workspacePackages.map((pkg) => ({
          find: new RegExp(`^@edl/${pkg}$`),
          replacement: `${packagesDir}${pkg}/src/index.ts`,
        })),
      ],
    },
    test: {
      name,
      include: ['test/**/*.test.ts'],
      // No test may reach past this machine: the AWS credential chain's last link asks the
      // instance metadata service (169.254.169.254), so it is off in every test process.
      env: { AWS_EC2_METADATA_DISABLED: 'true' },
      testTimeout: testTimeoutMs,
      hookTimeout: testTimeoutMs,
    },
  });
}
