// @ts-check
/**
 * The grpc-js that the published @edl/proto carries (scripts/pack-all.mjs calls this on the package
 * it staged): @grpc/grpc-js and @js-sdsl/ordered-map as bundled dependencies in the tarball's
 * node_modules, the only copy the other packages use (through `@edl/proto/grpc`).
 *
 * Not @grpc/proto-loader: grpc-js requires it only to load the channelz and ORCA protos, and
 * elasticdl-ts enables neither; with its 30 dependencies (yargs, protobufjs with @types/node and an
 * install script) it would be 6.8 MB of an install that never loads it. The bundled grpc-js
 * declares it as an optional peer instead, so npm fetches nothing for it.
 *
 *   node packages/proto/scripts/bundle-grpc.mjs <staged @edl/proto directory>
 */
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle } from '../../../scripts/bundle-packages.mjs';

const protoDir = fileURLToPath(new URL('..', import.meta.url));
export const GRPC = '@grpc/grpc-js';
export const PROTO_LOADER = '@grpc/proto-loader';

const readJson = (/** @type {string} */ path) => JSON.parse(readFileSync(path, 'utf8'));
const writeJson = (/** @type {string} */ path, /** @type {unknown} */ value) =>
  writeFileSync(path, `${JSON.stringify(value, null, 2)}\n`);

/**
 * Puts grpc-js into `stagedDir/node_modules`, without proto-loader, and names it in the staged
 * package.json's `bundleDependencies`. Returns its version.
 * @param {string} stagedDir
 */
export function bundleGrpc(stagedDir) {
  const stagedManifest = readJson(join(stagedDir, 'package.json'));
  if (stagedManifest.dependencies?.[GRPC] === undefined) {
    throw new Error(`bundle-grpc: ${GRPC} is not a dependency of ${stagedManifest.name}`);
  }
  const versions = bundle(stagedDir, [GRPC], protoDir, new Set([PROTO_LOADER]));
  const grpcManifestFile = join(stagedDir, 'node_modules', GRPC, 'package.json');
  const grpcManifest = readJson(grpcManifestFile);
  const loaderRange = grpcManifest.dependencies?.[PROTO_LOADER];
  if (loaderRange === undefined) throw new Error(`bundle-grpc: ${GRPC} no longer depends on ${PROTO_LOADER}`);
  delete grpcManifest.dependencies[PROTO_LOADER];
  grpcManifest.peerDependencies = { ...grpcManifest.peerDependencies, [PROTO_LOADER]: loaderRange };
  grpcManifest.peerDependenciesMeta = {
    ...grpcManifest.peerDependenciesMeta,
    [PROTO_LOADER]: { optional: true },
  };
  writeJson(grpcManifestFile, grpcManifest);
  stagedManifest.bundleDependencies = [GRPC];
  writeJson(join(stagedDir, 'package.json'), stagedManifest);
  return versions;
}

if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [dir] = process.argv.slice(2);
  if (dir === undefined) {
    console.error('usage: node packages/proto/scripts/bundle-grpc.mjs <staged @edl/proto directory>');
    process.exit(2);
  }
  console.log(bundleGrpc(dir));
}
