// The grpc-js that pack-all bundles into the published @edl/proto: grpc-js and its one other
// dependency, no @grpc/proto-loader anywhere (an optional peer of the bundled grpc-js instead), and
// a server and client from the staged copy alone answer a call; only channelz asks for proto-loader.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script without declarations
import { bundleGrpc } from '../scripts/bundle-grpc.mjs';

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

// Runs in the staged directory, outside the workspace: `require` finds only the bundled copies.
const child = `const grpc = require('@grpc/grpc-js');
const echo = { path: '/t.Echo/Echo', requestStream: false, responseStream: false,
  requestSerialize: (b) => b, requestDeserialize: (b) => b, responseSerialize: (b) => b, responseDeserialize: (b) => b };
const server = new grpc.Server();
server.addService({ Echo: echo }, { Echo: (call, done) => done(null, Buffer.concat([call.request, Buffer.from('!')])) });
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  const client = new grpc.Client('127.0.0.1:' + port, grpc.credentials.createInsecure());
  client.makeUnaryRequest(echo.path, (b) => b, (b) => b, Buffer.from('hi'), (e, reply) => {
    let channelz;
    try { grpc.getChannelzServiceDefinition(); channelz = 'loaded'; } catch (c) { channelz = c.code + ' ' + c.message.split('\\n')[0]; }
    console.log(JSON.stringify({ error: e && e.message, reply: reply && reply.toString(), channelz }));
    client.close();
    server.forceShutdown();
  });
});`;

describe('bundleGrpc', () => {
  let staged: string;
  let versions: Record<string, string>;
  beforeAll(() => {
    staged = mkdtempSync(join(tmpdir(), 'edl-bundle-grpc-'));
    const proto = readJson(new URL('../package.json', import.meta.url).pathname);
    writeFileSync(
      join(staged, 'package.json'),
      JSON.stringify({ name: proto.name, version: proto.version, dependencies: proto.dependencies }),
    );
    versions = bundleGrpc(staged);
  });

  it('bundles grpc-js and @js-sdsl/ordered-map, and no @grpc/proto-loader', () => {
    const manifest = readJson(join(staged, 'package.json'));
    expect(manifest.bundleDependencies).toEqual(['@grpc/grpc-js']);
    const grpc = readJson(join(staged, 'node_modules/@grpc/grpc-js/package.json'));
    expect(versions).toEqual({ '@grpc/grpc-js': grpc.version });
    expect(Object.keys(grpc.dependencies)).toEqual(['@js-sdsl/ordered-map']);
    expect(grpc.peerDependencies['@grpc/proto-loader']).toMatch(/^\^0\./);
    expect(grpc.peerDependenciesMeta['@grpc/proto-loader']).toEqual({ optional: true });
    expect(existsSync(join(staged, 'node_modules/@js-sdsl/ordered-map/package.json'))).toBe(true);
    expect(existsSync(join(staged, 'node_modules/@grpc/proto-loader'))).toBe(false);
    expect(existsSync(join(staged, 'node_modules/@grpc/grpc-js/node_modules'))).toBe(false);
    expect(existsSync(join(staged, 'node_modules/@grpc/grpc-js/LICENSE'))).toBe(true);
  });

  it('serves and calls from the bundled copy alone; only channelz needs proto-loader', () => {
    writeFileSync(join(staged, 'echo.cjs'), child);
    // Without NODE_PATH (a runner's may name the workspace's packages), as a user's install runs.
    const { NODE_PATH: _, ...env } = process.env;
    const out = JSON.parse(
      execFileSync(process.execPath, ['echo.cjs'], { cwd: staged, env, encoding: 'utf8' }),
    );
    expect(out.error).toBeNull();
    expect(out.reply).toBe('hi!');
    expect(out.channelz).toMatch(/^MODULE_NOT_FOUND Cannot find module '@grpc\/proto-loader'/);
  });
});
