#!/usr/bin/env node
/**
 * Master scale, simulated (issue 25, item 6): 1,000 simulated workers pushing a 25 MB dense model's
 * gradients (ElasticDL's report_gradient with the model back) against 1 and 4 parameter-server
 * shards. What bounds pushes/s is each shard's work per push: decode its part of the
 * ReportGradientRequest (the generated protobuf decoder the gRPC server uses, then the tensors),
 * the ParameterService's checks and the optimizer's update (async, SGD), and the
 * ReportGradientResponse that carries its part of the model back. That work is measured here, in
 * one process, shard after shard; no sockets.
 *
 * - The 1,000 workers share one gradient buffer (1,000 copies of 25 MB would not fit): the
 *   request bytes each shard receives are encoded once from it, and the simulated workers differ
 *   only in their id, task and the model version they last saw (round-robin, so each push is up to
 *   999 versions stale: maxStaleness is set above that, as a job of that size would set it).
 * - Variables (25 of 1 MB) are placed by `placeDenseVariables` of @edl/ps, by size.
 * - 4 shards on a 2-core machine cannot run in parallel, so the 4-shard figure is extrapolated:
 *   with each shard on its own core, a push completes when its slowest shard does, so the bound is
 *   1 / (the largest per-shard cost), and it says so. Pushes/s counts whole pushes (all shards).
 *
 *   node bench/ps-scale.mjs
 *   EDL_BENCH_PUSHES=40 EDL_BENCH_MODEL_MB=25 EDL_BENCH_WORKERS=1000 EDL_BENCH_SHARDS=1,4
 */
import { createRequire } from 'node:module';
import { machineLine } from './lib/machine.mjs';

const { ParameterService, ParameterStore, placeDenseVariables } = await import(
  '../packages/ps/dist/index.js'
);
const { fromTensorMessage, GradientStatus, toTensorMessage, ReportGradientRequestSchema } = await import(
  '../packages/proto/dist/index.js'
);
const { encodeReportGradientRequest, encodeReportGradientResponse } = await import(
  '../packages/proto/dist/model-message-codec.js'
);
const require = createRequire(new URL('../packages/proto/package.json', import.meta.url));
const { fromBinary } = await import(require.resolve('@bufbuild/protobuf'));

const pushes = Number(process.env.EDL_BENCH_PUSHES ?? 40);
const modelMb = Number(process.env.EDL_BENCH_MODEL_MB ?? 25);
const workers = Number(process.env.EDL_BENCH_WORKERS ?? 1000);
const shardCounts = (process.env.EDL_BENCH_SHARDS ?? '1,4').split(',').map(Number);
const VARIABLES = 25;
const floatsPerVariable = Math.floor((modelMb * 1e6) / 4 / VARIABLES);

/** The ledger of a job with no exactly-once concern here: every range may be applied. */
const openLedger = {
  checkRanges: () => ({ ok: true }),
  keepsVersion: () => false,
  recordApplied: () => 0,
};

const names = Array.from({ length: VARIABLES }, (_, i) => `dense_${String(i).padStart(2, '0')}/kernel`);
const shared = new Float32Array(floatsPerVariable * VARIABLES);
for (let i = 0; i < shared.length; i++) shared[i] = Math.sin(i) * 1e-3;
const slice = (name) => {
  const at = names.indexOf(name) * floatsPerVariable;
  return shared.subarray(at, at + floatsPerVariable);
};

/** One shard: its store and the request bytes its part of every push arrives as. */
function makeShard(variableNames) {
  const store = new ParameterStore({ mode: 'async', maxStaleness: workers + 1, optimizer: { type: 'sgd' } });
  store.initialize(
    variableNames.map((name) => ({
      name,
      shape: [floatsPerVariable],
      values: new Float32Array(slice(name)),
    })),
  );
  const request = encodeReportGradientRequest({
    workerId: 'worker-000',
    taskId: 1n,
    rangeStart: 0n,
    rangeEnd: 64n,
    modelVersion: 0n,
    gradients: variableNames.map((name) =>
      toTensorMessage({ name, shape: [floatsPerVariable], values: slice(name) }, { copy: false }),
    ),
    moreRanges: [],
    wantModel: true,
    mirror: false,
    wantUpdate: false,
  });
  return {
    service: new ParameterService(store, openLedger),
    store,
    request,
    seconds: 0,
    pushes: 0,
    bytesIn: 0,
    bytesOut: 0,
  };
}

/** Push `p` from the simulated workers, arriving at `shard`: what its server does with it. */
function serve(shard, p, lastSeen) {
  const started = performance.now();
  const message = fromBinary(ReportGradientRequestSchema, shard.request);
  const worker = p % workers;
  const reply = shard.service.reportGradient({
    workerId: `worker-${worker}`,
    taskId: p + 1,
    rangeStart: 0,
    rangeEnd: 64,
    modelVersion: lastSeen[worker] ?? 0,
    gradients: message.gradients.map((t) => fromTensorMessage(t)),
    wantModel: true,
  });
  if (reply.status !== GradientStatus.ACCEPTED)
    throw new Error(`push ${p} was refused with status ${reply.status}`);
  const response = encodeReportGradientResponse({
    status: reply.status,
    modelVersion: BigInt(reply.modelVersion),
    taskProgress: 0n,
    variables: (reply.variables ?? []).map((v) => toTensorMessage(v, { copy: false })),
    hasModel: true,
    mirrored: false,
    modelChecksum: 0,
    updateVersion: 0n,
    updateGradients: 0n,
    updateLrDivisor: 0n,
  });
  shard.seconds += (performance.now() - started) / 1000;
  shard.pushes++;
  shard.bytesIn += shard.request.length;
  shard.bytesOut += response.length;
  return reply.modelVersion;
}

console.log(`ps-scale: ${machineLine()}`);
console.log(
  `${workers} simulated workers sharing one gradient buffer; dense model ${((shared.length * 4) / 1e6).toFixed(1)} MB in ${VARIABLES} variables; ` +
    `async SGD, the model back with every push; ${pushes} measured pushes per configuration after 2 warm-up pushes`,
);
for (const n of shardCounts) {
  const placement = placeDenseVariables(new Map(names.map((name) => [name, floatsPerVariable * 4])), n);
  const shards = Array.from({ length: n }, (_, k) =>
    makeShard(names.filter((name) => placement.shardOf.get(name) === k)),
  );
  const lastSeen = new Array(workers);
  for (let p = -2; p < pushes; p++) {
    // Every shard gets its part of the push; the worker then holds the version of the first.
    let version = 0;
    for (const shard of shards) version = serve(shard, Math.max(0, p), lastSeen);
    lastSeen[Math.max(0, p) % workers] = version;
    if (p === -1)
      for (const shard of shards) Object.assign(shard, { seconds: 0, pushes: 0, bytesIn: 0, bytesOut: 0 });
  }
  const perShard = shards.map((s) => s.seconds / s.pushes);
  const bound = 1 / Math.max(...perShard);
  const serial = pushes / shards.reduce((t, s) => t + s.seconds, 0);
  console.log(
    `${n} shard${n > 1 ? 's' : ''}: per-push cost per shard ${perShard.map((c) => `${(c * 1000).toFixed(1)} ms`).join(', ')}; ` +
      `in ${(shards[0].bytesIn / shards[0].pushes / 1e6).toFixed(1)} MB, out ${(shards[0].bytesOut / shards[0].pushes / 1e6).toFixed(1)} MB per push per shard; ` +
      (n === 1
        ? `bound ${bound.toFixed(1)} pushes/s (measured, one core)`
        : `bound ${bound.toFixed(1)} pushes/s with a core per shard (extrapolated from the measured cost per shard; ${serial.toFixed(1)} pushes/s measured on one core, shard after shard)`),
  );
}
console.log(
  "The bound is the shards' CPU alone: each push also moves its bytes in and out over the network, " +
    'which a 10 Gb/s link caps at about 1250 MB/s divided by the MB per push per shard.',
);
