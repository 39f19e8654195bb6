#!/usr/bin/env node
/**
 * What one training step's round trip costs in gRPC itself: a gradient-sized message up and a
 * model-sized one back (220 KB each, the MNIST CNN of train-vs-fit) over loopback, one call at a
 * time, as a unary call per step (how `report_gradient` travels) and as one message each way on a
 * long-lived bidirectional stream. The payloads are opaque bytes (identity serializers), so what is
 * measured is grpc-js and HTTP/2 alone: no protobuf, no optimizer. The server runs in this process,
 * the client in a child process; each side's CPU per round trip is measured over the same window.
 * Both ends set up as the master's and a worker's are: the master's server options and 16 MiB
 * HTTP/2 receive window (packages/master/src/http2-window.ts), the worker's channel options
 * (packages/proto/src/master-channel.ts).
 *
 *   node bench/gradient-round-trip.mjs
 *   EDL_BENCH_BYTES=220000 EDL_BENCH_CALLS=400 EDL_BENCH_REPEAT=3
 */
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { machineLine } from './lib/machine.mjs';

const { widenReceiveWindow } = await import('../packages/master/dist/http2-window.js');
const { createMasterChannel } = await import('../packages/proto/dist/master-channel.js');

// grpc-js as the master has it, through @edl/proto (@edl/proto/grpc).
const require = createRequire(new URL('../packages/proto/package.json', import.meta.url));
const grpc = require('@grpc/grpc-js');

const bytes = Number(process.env.EDL_BENCH_BYTES ?? 220_000);
const calls = Number(process.env.EDL_BENCH_CALLS ?? 400);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 3);
const maxBytes = 64 * 2 ** 20;
const identity = (x) => x;
const method = (stream) => ({
  path: stream ? '/bench.RoundTrip/Stream' : '/bench.RoundTrip/Unary',
  requestStream: stream,
  responseStream: stream,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});
const service = { unary: method(false), stream: method(true) };
const cpuMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

if (process.argv[2] === '--client') {
  // The client: on each `run` message, `calls` round trips one after another, after a warm-up.
  const client = createMasterChannel(process.argv[3], maxBytes);
  const body = Buffer.alloc(bytes, 1);
  // Every call carries the job token, as a worker's do (a stream: once, when it opens).
  const token = () => {
    const metadata = new grpc.Metadata();
    metadata.set('x-edl-job-token', 'f'.repeat(64));
    return metadata;
  };
  let stream;
  let answer;
  const roundTrip = (kind) => {
    if (kind === 'unary') {
      return new Promise((resolve, reject) =>
        client.makeUnaryRequest(service.unary.path, identity, identity, body, token(), {}, (error, reply) =>
          error ? reject(error) : resolve(reply),
        ),
      );
    }
    if (stream === undefined) {
      stream = client.makeBidiStreamRequest(service.stream.path, identity, identity, token(), {});
      stream.on('data', (reply) => answer(reply));
    }
    return new Promise((resolve) => {
      answer = resolve;
      stream.write(body);
    });
  };
  process.on('message', async (kind) => {
    if (kind === 'exit') {
      stream?.end();
      client.close();
      process.exit(0);
    }
    for (let i = 0; i < 20; i++) await roundTrip(kind);
    process.send('counting');
    const cpu = cpuMs();
    const begin = performance.now();
    for (let i = 0; i < calls; i++) await roundTrip(kind);
    process.send({ wallMs: performance.now() - begin, cpuMs: cpuMs() - cpu });
  });
  process.send('ready');
} else {
  console.log(
    `gradient-round-trip: ${machineLine()}, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(`${bytes} bytes each way, ${calls} round trips one at a time, ${repeat} round-robin passes`);
  const server = new grpc.Server({
    'grpc.max_receive_message_length': maxBytes,
    'grpc.max_send_message_length': maxBytes,
    'grpc.enable_channelz': 0,
    'grpc.max_concurrent_streams': 4096,
  });
  const afterBind = widenReceiveWindow(server);
  const reply = Buffer.alloc(bytes, 2);
  server.addService(service, {
    unary: (_call, callback) => callback(null, reply),
    stream: (call) => {
      call.on('data', () => call.write(reply));
      call.on('end', () => call.end());
    },
  });
  const port = await new Promise((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  afterBind?.();
  const child = fork(fileURLToPath(import.meta.url), ['--client', `127.0.0.1:${port}`]);
  const next = () => new Promise((resolve) => child.once('message', resolve));
  await next(); // ready
  const results = { unary: [], stream: [] };
  for (let pass = 0; pass < repeat; pass++) {
    for (const kind of ['unary', 'stream']) {
      child.send(kind);
      await next(); // counting: the warm-up is over
      const cpu = cpuMs();
      const client = await next();
      results[kind].push({
        server: (cpuMs() - cpu) / calls,
        client: client.cpuMs / calls,
        wall: client.wallMs / calls,
      });
    }
  }
  child.send('exit');
  server.forceShutdown();
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  };
  const pad = (s, n) => String(s).padStart(n);
  console.log(
    `\n${'per round trip (median)'.padEnd(26)}${pad('server CPU ms', 15)}${pad('client CPU ms', 15)}${pad('wall ms', 10)}`,
  );
  const row = {};
  for (const kind of ['unary', 'stream']) {
    row[kind] = {
      server: median(results[kind].map((r) => r.server)),
      client: median(results[kind].map((r) => r.client)),
      wall: median(results[kind].map((r) => r.wall)),
    };
    const r = row[kind];
    console.log(
      `${(kind === 'unary' ? 'unary call' : 'bidi stream message').padEnd(26)}${pad(r.server.toFixed(3), 15)}${pad(r.client.toFixed(3), 15)}${pad(r.wall.toFixed(3), 10)}`,
    );
  }
  console.log(
    `stream / unary: server CPU ${(row.stream.server / row.unary.server).toFixed(2)}x, client CPU ${(row.stream.client / row.unary.client).toFixed(2)}x, wall ${(row.stream.wall / row.unary.wall).toFixed(2)}x`,
  );
  console.log(
    `load average at the end: ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}
