/**
 * `edl k8s` against the in-process fake Kubernetes API server of @edl/master's tests, through a
 * kubeconfig file, as a user's cluster would be reached.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { listCheckpoints, readCheckpoint } from '@edl/master';
import { buildRbacObjects } from '@edl/master/kubernetes';
import { generateCensusCsv } from '@edl/model-zoo';
import { configureS3 } from '@edl/storage';
import { loadAllYaml } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeCluster, startFakeCluster } from '../../master/test/kubernetes/fixtures/fake-cluster.js';
import { S3RVER_CREDENTIALS, startS3rver } from '../../storage/test/support/s3rver-process.js';
import { runCli } from '../src/main.js';
import { LOOPBACK_MASTER_POD_OPTIONS } from './helpers/loopback-master-pod.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const simWorker = fileURLToPath(new URL('../../master/test/fixtures/sim-worker.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'edl-k8s-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function io() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  stdout.on('data', (d) => out.push(String(d)));
  stderr.on('data', (d) => err.push(String(d)));
  return {
    io: { stdout, stderr, stdin: new PassThrough(), isTTY: false },
    out: () => out.join(''),
    err: () => err.join(''),
  };
}

async function edl(args: string[]) {
  const c = io();
  const code = await runCli(args, c.io);
  return { code, stdout: c.out(), stderr: c.err() };
}

function kubeconfigFile(url: string): string {
  const path = join(dir, `kubeconfig-${url.split(':').at(-1)}`);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: { server: '${url}', insecure-skip-tls-verify: true }
users:
- name: tester
  user: { token: not-checked }
contexts:
- name: fake
  context: { cluster: fake, user: tester, namespace: ml }
current-context: fake
`,
  );
  return path;
}

const JOB = ['--image', 'registry.example.com/edl:1', '--num-workers', '3', '--job-name', 'mnist'];
const TRAIN = ['--model-def', 'cifar10-small', '--training-data', '/data/train', '--num-epochs', '2'];

describe('edl k8s manifest', () => {
  it('prints the Secret, master pod and Service as YAML documents, with the RBAC objects on request', async () => {
    const run = await edl([
      'k8s',
      'manifest',
      ...JOB,
      '--namespace',
      'ml',
      '--worker-memory',
      '2Gi',
      ...TRAIN,
      '--rbac',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // biome-ignore lint/suspicious/noExplicitAny: YAML documents of several kinds, checked field by field.
    const docs = loadAllYaml(run.stdout) as Array<Record<string, any>>;
    expect(docs.map((d) => `${d.kind}/${d.metadata.name}`)).toEqual([
      'ServiceAccount/edl-master',
      'Role/edl-master',
      'RoleBinding/edl-master',
      'Secret/mnist-token',
      'Pod/mnist-master',
      'Service/mnist-master',
    ]);
    expect(docs.every((d) => d.metadata.namespace === 'ml')).toBe(true);
    expect(docs[3]!.stringData.token).toMatch(/^[0-9a-f]{64}$/);
    const master = docs[4]!.spec.containers[0];
    expect(master.args.slice(-7)).toEqual(['--', ...TRAIN]);
    expect(master.args).toContain('--worker-memory');
    // deploy/k8s/rbac.yaml is the same RBAC, for the default namespace.
    const file = loadAllYaml(readFileSync(join(repoRoot, 'deploy/k8s/rbac.yaml'), 'utf8'));
    const rbac = buildRbacObjects('default');
    expect(file).toEqual([rbac.serviceAccount, rbac.role, rbac.roleBinding]);
  });

  it('gives the pods S3 credentials by a Secret or a worker service account, with no volume', async () => {
    const train = [
      '--model-def',
      'mnist',
      '--training-data',
      's3://data/mnist/',
      '--checkpoint-dir',
      's3://data/ckpt/',
    ];
    const run = await edl([
      'k8s',
      'manifest',
      ...JOB,
      '--namespace',
      'ml',
      '--s3-credentials-secret',
      's3-creds',
      '--worker-service-account',
      'edl-s3-reader',
      ...train,
      '--s3-endpoint',
      'http://minio.storage.svc:9000',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // biome-ignore lint/suspicious/noExplicitAny: YAML documents of several kinds, checked field by field.
    const docs = loadAllYaml(run.stdout) as Array<Record<string, any>>;
    const pod = docs.find((d) => d.kind === 'Pod')!;
    // The master keeps its own RBAC account; the Secret's keys are its environment; no volume.
    expect(pod.spec.serviceAccountName).toBe('edl-master');
    expect(pod.spec.volumes).toBeUndefined();
    const master = pod.spec.containers[0];
    expect(master.envFrom).toEqual([{ secretRef: { name: 's3-creds' } }]);
    expect(master.volumeMounts).toBeUndefined();
    const k8sArgs = master.args.slice(0, master.args.indexOf('--'));
    expect(k8sArgs.join(' ')).toContain(
      '--s3-credentials-secret s3-creds --worker-service-account edl-s3-reader',
    );
    expect(master.args.slice(master.args.indexOf('--') + 1)).toEqual([
      ...train,
      '--s3-endpoint',
      'http://minio.storage.svc:9000',
    ]);
    // Names that are not Kubernetes object names, and an endpoint that is not a URL, fail at once.
    for (const [args, message] of [
      [
        ['--s3-credentials-secret', 'S3_Creds'],
        "Expected a Kubernetes object name for --s3-credentials-secret but received 'S3_Creds'",
      ],
      [
        ['--worker-service-account', 'a b'],
        "Expected a Kubernetes object name for --worker-service-account but received 'a b'",
      ],
      [
        ['--s3-endpoint', 'minio:9000'],
        "Expected an http:// or https:// URL without credentials for --s3-endpoint but received 'minio:9000'",
      ],
    ] as const) {
      const bad = await edl(['k8s', 'manifest', ...JOB, '--namespace', 'ml', ...args, ...train]);
      expect(bad.code).toBe(2);
      expect(bad.stderr.split('\n')[0]).toBe(`edl k8s: ${message}`);
    }
  });

  it('rejects bad arguments with one line and the usage', async () => {
    for (const [args, message] of [
      [
        ['--namespace', 'ml', ...TRAIN],
        'edl k8s: --image is required (the elasticdl-ts image, see deploy/Dockerfile)',
      ],
      [
        [...JOB, '--namespace', 'ml', '--model-def', 'm', '--no-such-option', 'x'],
        "edl k8s: Unknown option '--no-such-option'",
      ],
      [
        [...JOB, '--namespace', 'ml', '--model-def', 'm'],
        'edl k8s: no data: give --training-data, --validation-data or --prediction-data',
      ],
      [
        [...JOB, '--namespace', 'ml', '--worker-memory', 'lots', ...TRAIN],
        "edl k8s: Expected a Kubernetes quantity (e.g. 500m, 2, 4Gi) for --worker-memory but received 'lots'",
      ],
      [
        [...JOB, '--namespace', 'ML', ...TRAIN],
        "edl k8s: Expected a namespace (a DNS label) for --namespace but received 'ML'",
      ],
      [
        ['--image', 'i', '--job-name', 'Not_A_Label', ...TRAIN],
        "edl k8s: Expected a lower-case DNS label of at most 40 characters for --job-name but received 'Not_A_Label'",
      ],
      [
        [...JOB, '--num-workers', 'two', ...TRAIN],
        "edl k8s: Expected an integer in [0, 10000] for --num-workers but received 'two'",
      ],
    ] as const) {
      const run = await edl(['k8s', 'manifest', ...args]);
      expect(run.code).toBe(2);
      const [first, second] = run.stderr.split('\n');
      expect(first).toContain(message);
      expect(second).toMatch(/^Usage: edl k8s submit/);
    }
    const help = await edl(['k8s', 'status', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/edl k8s logs {5}JOB --namespace NS \[--worker ID\] \[--tail N\]/);
  });
});

describe('edl k8s submit | status | logs | delete against a fake API server', () => {
  let cluster: FakeCluster | undefined;
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it('creates the objects, reports the pods, prints logs and deletes everything', async () => {
    cluster = await startFakeCluster({ mode: 'idle', startDelayMs: 5 }, {}, 'ml');
    const c = cluster;
    const kubeconfig = kubeconfigFile(c.server.url);
    process.env.EDL_JOB_TOKEN = 'a-token-for-the-test';
    const submitted = await edl(['k8s', 'submit', ...JOB, '--kubeconfig', kubeconfig, ...TRAIN]);
    delete process.env.EDL_JOB_TOKEN;
    expect(submitted.stderr).toBe('');
    expect(submitted.stdout).toMatch(
      /^job mnist submitted to namespace ml: master pod mnist-master, service mnist-master.ml.svc:50001/,
    );
    const secret = c.server.get('secrets', 'ml', 'mnist-token')!;
    expect(Buffer.from(secret.data.token, 'base64').toString()).toBe('a-token-for-the-test');
    const pod = c.server.get('pods', 'ml', 'mnist-master')!;
    expect(pod.spec.serviceAccountName).toBe('edl-master');
    const service = c.server.get('services', 'ml', 'mnist-master')!;
    expect(service.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: 'mnist-master', uid: pod.metadata.uid },
    ]);

    // Submitting the same job again fails with the API's message and leaves the first alone.
    const again = await edl(['k8s', 'submit', ...JOB, '--kubeconfig', kubeconfig, ...TRAIN]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /submitting job mnist to namespace ml failed: secrets "mnist-token" already exists \(HTTP 409\)/,
    );
    expect(c.server.get('pods', 'ml', 'mnist-master')).toBeDefined();

    // Worker pods as the master would make them; one was OOM-killed.
    for (const id of [0, 1]) {
      c.server.create('pods', 'ml', {
        metadata: {
          name: `mnist-worker-${id}`,
          labels: { 'edl.dev/job': 'mnist', 'edl.dev/role': 'worker', 'edl.dev/worker-id': `worker-${id}` },
        },
        spec: { containers: [{ name: 'worker', image: 'i' }] },
      });
    }
    await new Promise((r) => setTimeout(r, 100));
    c.kubelet.kill('mnist-worker-1', 'oom');
    c.server.logs.set('ml/mnist-master', ['master listening on 0.0.0.0:50001', 'epoch 0 started']);
    c.server.logs.set('ml/mnist-worker-0', ['{"event":"progress"}']);

    const status = await edl(['k8s', 'status', 'mnist', '--kubeconfig', kubeconfig]);
    expect(status.stderr).toBe('');
    expect(status.stdout.split('\n')).toEqual([
      'job mnist (namespace ml): master Running; workers 1 Running, 1 Failed',
      'POD             ROLE    WORKER    PHASE    REASON     EXIT',
      'mnist-master    master            Running',
      'mnist-worker-0  worker  worker-0  Running',
      'mnist-worker-1  worker  worker-1  Failed   OOMKilled  137',
      '',
    ]);
    const json = JSON.parse(
      (await edl(['k8s', 'status', 'mnist', '--namespace', 'ml', '--kubeconfig', kubeconfig, '--json']))
        .stdout,
    );
    expect(json.workers).toEqual({ Running: 1, Pending: 0, Succeeded: 0, Failed: 1, Terminating: 0 });

    expect((await edl(['k8s', 'logs', 'mnist', '--kubeconfig', kubeconfig])).stdout).toBe(
      'master listening on 0.0.0.0:50001\nepoch 0 started\n',
    );
    expect((await edl(['k8s', 'logs', 'mnist', '--kubeconfig', kubeconfig, '--tail', '1'])).stdout).toBe(
      'epoch 0 started\n',
    );
    expect(
      (await edl(['k8s', 'logs', 'mnist', '--worker', 'worker-0', '--kubeconfig', kubeconfig])).stdout,
    ).toBe('{"event":"progress"}\n');
    const missing = await edl(['k8s', 'logs', 'mnist', '--worker', 'worker-9', '--kubeconfig', kubeconfig]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /logs of pod mnist-worker-9 in namespace ml: pods "mnist-worker-9" not found \(HTTP 404\)/,
    );

    const deleted = await edl(['k8s', 'delete', 'mnist', '--kubeconfig', kubeconfig]);
    expect(deleted.stdout).toBe(
      'deleted pod/mnist-master pod/mnist-worker-0 pod/mnist-worker-1 service/mnist-master secret/mnist-token\n',
    );
    await new Promise((r) => setTimeout(r, 100));
    expect(c.server.pods('ml')).toEqual([]);
    expect(c.server.get('services', 'ml', 'mnist-master')).toBeUndefined();
    expect(c.server.get('secrets', 'ml', 'mnist-token')).toBeUndefined();
    const gone = await edl(['k8s', 'status', 'mnist', '--kubeconfig', kubeconfig]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe('edl k8s: no pods of job mnist in namespace ml\n');
  });
});

/** A CSV of `records` rows `i,i%2` with a header, and a model definition that only the master reads (SGD, rate 1). */
function simJobFiles(name: string, records: number): { csv: string; modelDef: string } {
  const csv = join(dir, `${name}.csv`);
  writeFileSync(csv, `x,y\n${Array.from({ length: records }, (_, i) => `${i},${i % 2}`).join('\n')}\n`);
  const modelDef = join(dir, 'model.mjs');
  writeFileSync(
    modelDef,
    'export const model = () => null;\nexport const loss = () => null;\nexport async function* datasetFn() {}\nexport const optimizer = { name: "sgd", params: { learningRate: 1 } };\n',
  );
  return { csv, modelDef };
}

/** `edl k8s master` of job `name` on the fake cluster, with workers running `edlCommand`. */
function masterPodArgs(
  name: string,
  kubeconfig: string,
  edlCommand: readonly string[],
  k8sArgs: string[],
  trainArgs: string[],
): string[] {
  return [
    'k8s',
    'master',
    '--job-name',
    name,
    '--image',
    'edl:test',
    '--kubeconfig',
    kubeconfig,
    ...LOOPBACK_MASTER_POD_OPTIONS,
    '--edl-command',
    JSON.stringify(edlCommand),
    ...k8sArgs,
    '--',
    ...trainArgs,
  ];
}

/** {@link masterPodArgs} with simulated workers, training on the CSV of {@link simJobFiles}. */
function simMasterPod(
  name: string,
  kubeconfig: string,
  files: { csv: string; modelDef: string },
  k8sArgs: string[],
  trainArgs: string[],
): string[] {
  return masterPodArgs(name, kubeconfig, [process.execPath, simWorker], k8sArgs, [
    '--model-def',
    files.modelDef,
    '--training-data',
    files.csv,
    '--data-reader-params',
    '{"header":true}',
    '--minibatch-size',
    '10',
    ...trainArgs,
  ]);
}

describe('edl k8s master (what the master pod runs) on a fake cluster', () => {
  beforeAll(() => {
    for (const project of ['packages/proto', 'packages/data']) {
      execFileSync('pnpm', ['exec', 'tsc', '-b', project], { cwd: repoRoot, stdio: 'pipe' });
    }
  }, 180_000);

  it('runs a job whose workers are pods, relaunches a preempted one and prints the final status', async () => {
    const cluster = await startFakeCluster({ mode: 'process', startDelayMs: 20 }, {}, 'ml');
    try {
      const kubeconfig = kubeconfigFile(cluster.server.url);
      const token = 'master-pod-token';
      cluster.server.create('secrets', 'ml', { metadata: { name: 'demo-token' }, stringData: { token } });
      const files = simJobFiles('train', 200);
      const { modelDef } = files;
      Object.assign(process.env, {
        EDL_JOB_TOKEN: token,
        EDL_POD_NAME: 'demo-master',
        EDL_POD_UID: 'uid-demo',
        EDL_NAMESPACE: 'ml',
      });
      let killed = false;
      const timer = setInterval(() => {
        const running = cluster.kubelet.running();
        if (!killed && running.includes('demo-worker-1')) {
          killed = true;
          setTimeout(() => {
            // Guarded: on a very slow machine the worker could be gone already (the test then fails on the counts).
            if (cluster.kubelet.running().includes('demo-worker-1'))
              cluster.kubelet.kill('demo-worker-1', 'preempt');
          }, 150);
        }
      }, 20);
      const run = await edl(
        simMasterPod(
          'demo',
          kubeconfig,
          files,
          [
            '--num-workers',
            '2',
            '--worker-env',
            'SIM_RECORDS=200',
            '--worker-env',
            'SIM_STEP_DELAY_MS=5',
            '--worker-cpu',
            '500m',
          ],
          ['--num-minibatches-per-task', '2', '--num-epochs', '2'],
        ),
      );
      clearInterval(timer);
      for (const k of ['EDL_JOB_TOKEN', 'EDL_POD_NAME', 'EDL_POD_UID', 'EDL_NAMESPACE'])
        delete process.env[k];
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
      expect(result).toMatchObject({ job: 'demo', state: 'succeeded', modelVersion: 40 });
      expect(result.workers).toMatchObject({
        launched: 3,
        relaunched: 1,
        preempted: 1,
        failed: 0,
        running: 0,
      });
      expect(result.workers.succeeded + result.workers.stopped).toBe(2);
      expect(run.stderr).toMatch(
        /workers: 3 launched \(1 relaunches\), \d succeeded, 0 failed, 1 preempted or deleted/,
      );
      const worker = cluster.server.get('pods', 'ml', 'demo-worker-0')!;
      expect(worker.metadata.ownerReferences).toEqual([
        { apiVersion: 'v1', kind: 'Pod', name: 'demo-master', uid: 'uid-demo' },
      ]);
      const container = worker.spec.containers[0];
      expect(container.args.slice(1, 4)).toEqual(['worker', '--model-def', modelDef]);
      expect(container.resources).toEqual({ requests: { cpu: '500m' }, limits: { cpu: '500m' } });
      expect(container.env).toContainEqual({ name: 'SIM_RECORDS', value: '200' });
    } finally {
      await cluster.close();
    }
  }, 120_000);

  it('on SIGTERM (its pod deleted) deletes the worker pods and exits 143', async () => {
    const cluster = await startFakeCluster({ mode: 'process', startDelayMs: 20 }, {}, 'ml');
    try {
      const kubeconfig = kubeconfigFile(cluster.server.url);
      cluster.server.create('secrets', 'ml', {
        metadata: { name: 'slow-token' },
        stringData: { token: 't' },
      });
      const files = simJobFiles('slow', 100);
      process.env.EDL_JOB_TOKEN = 't';
      const running = edl(
        simMasterPod(
          'slow',
          kubeconfig,
          files,
          [
            '--num-workers',
            '2',
            '--namespace',
            'ml',
            '--worker-env',
            'SIM_RECORDS=100',
            '--worker-env',
            'SIM_STEP_DELAY_MS=1000',
          ],
          [],
        ),
      );
      const deadline = Date.now() + 20_000;
      while (cluster.kubelet.running().length < 2 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(cluster.kubelet.running().sort()).toEqual(['slow-worker-0', 'slow-worker-1']);
      process.emit('SIGTERM');
      const run = await running;
      delete process.env.EDL_JOB_TOKEN;
      expect(run.code, run.stderr.slice(-2000)).toBe(143);
      expect(JSON.parse(run.stdout.trim().split('\n').at(-1)!)).toMatchObject({
        job: 'slow',
        state: 'terminated',
        workers: { launched: 2, relaunched: 0, stopped: 2, running: 0 },
      });
      expect(cluster.server.pods('ml')).toEqual([]);
    } finally {
      await cluster.close();
    }
  }, 60_000);

  it("--learning-rate reaches the master pod's optimizer, over the model definition's", async () => {
    const cluster = await startFakeCluster({ mode: 'process', startDelayMs: 20 }, {}, 'ml');
    try {
      const kubeconfig = kubeconfigFile(cluster.server.url);
      cluster.server.create('secrets', 'ml', { metadata: { name: 'lr-token' }, stringData: { token: 't' } });
      // The model definition says 1: every record applied once would leave its count at 1.
      const files = simJobFiles('lr', 40);
      const checkpointDir = join(dir, 'lr-ckpt');
      process.env.EDL_JOB_TOKEN = 't';
      const run = await edl(
        simMasterPod(
          'lr',
          kubeconfig,
          files,
          ['--num-workers', '1', '--namespace', 'ml', '--worker-env', 'SIM_RECORDS=40'],
          ['--learning-rate', '0.25', '--checkpoint-dir', checkpointDir],
        ),
      );
      delete process.env.EDL_JOB_TOKEN;
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
      expect(result).toMatchObject({ job: 'lr', state: 'succeeded', modelVersion: 4 });
      const checkpoint = await readCheckpoint(result.checkpoint);
      expect(checkpoint.optimizer).toEqual({ type: 'sgd', learningRate: 0.25 });
      // The simulated worker's gradient is -1 per record: SGD adds the learning rate once per record.
      expect([...checkpoint.store.variables[0]!.values]).toEqual(Array(40).fill(0.25));
    } finally {
      await cluster.close();
    }
  }, 60_000);

  it('checkpoints to S3 with no volume; worker pods get the credentials Secret, service account and endpoint', async () => {
    const s3 = await startS3rver();
    const cluster = await startFakeCluster({ mode: 'process', startDelayMs: 20 }, {}, 'ml');
    const environment = [
      'EDL_JOB_TOKEN',
      'AWS_ACCESS_KEY_ID',
      'AWS_SECRET_ACCESS_KEY',
      'AWS_REGION',
      'AWS_ENDPOINT_URL_S3',
    ];
    try {
      await s3.createBucket('ckpt');
      const kubeconfig = kubeconfigFile(cluster.server.url);
      cluster.server.create('secrets', 'ml', { metadata: { name: 's3-token' }, stringData: { token: 't' } });
      const files = simJobFiles('s3', 40);
      // What the Secret's keys give the master pod.
      Object.assign(process.env, {
        EDL_JOB_TOKEN: 't',
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
        AWS_REGION: 'us-east-1',
      });
      const run = await edl(
        simMasterPod(
          's3',
          kubeconfig,
          files,
          [
            '--num-workers',
            '1',
            '--namespace',
            'ml',
            '--worker-env',
            'SIM_RECORDS=40',
            '--s3-credentials-secret',
            's3-creds',
            '--worker-service-account',
            'edl-s3-reader',
          ],
          ['--checkpoint-dir', 's3://ckpt/s3-job/', '--s3-endpoint', s3.endpoint],
        ),
      );
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
      expect(result).toMatchObject({
        job: 's3',
        state: 'succeeded',
        modelVersion: 4,
        checkpoint: 's3://ckpt/s3-job/checkpoint-000000000004.manifest.json',
      });
      expect((await readCheckpoint(result.checkpoint)).store.version).toBe(4);
      expect((await listCheckpoints('s3://ckpt/s3-job/')).at(-1)).toBe(4);
      const worker = cluster.server.get('pods', 'ml', 's3-worker-0')!;
      expect(worker.spec.serviceAccountName).toBe('edl-s3-reader');
      expect(worker.spec.automountServiceAccountToken).toBe(false);
      expect(worker.spec.volumes).toBeUndefined();
      const container = worker.spec.containers[0];
      expect(container.envFrom).toEqual([{ secretRef: { name: 's3-creds' } }]);
      expect(container.args.join(' ')).toContain(`--s3-endpoint ${s3.endpoint}`);
      // Batch-norm statistics are files beside local checkpoints only: no local path is made up.
      expect(container.args).not.toContain('--export-dir');
    } finally {
      for (const name of environment) delete process.env[name];
      configureS3({});
      await cluster.close();
      await s3.stop();
    }
  }, 60_000);

  it('runs the census model with real `edl worker` pods (the built CLI) and survives a preemption', async () => {
    const edlBin = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
    if (!existsSync(edlBin)) throw new Error(`${edlBin} is missing: run 'pnpm build' first`);
    const cluster = await startFakeCluster({ mode: 'process', startDelayMs: 20 }, {}, 'ml');
    try {
      const kubeconfig = kubeconfigFile(cluster.server.url);
      cluster.server.create('secrets', 'ml', {
        metadata: { name: 'census-token' },
        stringData: { token: 'census' },
      });
      const train = await generateCensusCsv({ file: join(dir, 'census-train.csv'), rows: 1500, seed: 1 });
      const valid = await generateCensusCsv({ file: join(dir, 'census-valid.csv'), rows: 300, seed: 2 });
      process.env.EDL_JOB_TOKEN = 'census';
      let preempted = '';
      const timer = setInterval(() => {
        // Preempt worker-0 once it has trained a step (its first step logs a "progress" line).
        const lines = cluster.server.logs.get('ml/census-worker-0') ?? [];
        if (!preempted && lines.some((l) => l.includes('"msg":"progress"'))) {
          preempted = 'census-worker-0';
          if (cluster.kubelet.running().includes(preempted)) cluster.kubelet.kill(preempted, 'preempt');
        }
      }, 50);
      const run = await edl(
        masterPodArgs(
          'census',
          kubeconfig,
          [process.execPath, edlBin],
          ['--num-workers', '2', '--namespace', 'ml'],
          [
            '--model-def',
            'census',
            '--training-data',
            train,
            '--validation-data',
            valid,
            '--data-reader-params',
            '{"header":true,"recordsPerShard":500}',
            '--backend',
            'cpu',
            '--minibatch-size',
            '50',
            '--num-minibatches-per-task',
            '2',
            // Long enough for worker-0 to log a step and be preempted before the end even on an
            // idle machine with Node 24 (2 epochs once ended first there).
            '--num-epochs',
            '6',
          ],
        ),
      );
      clearInterval(timer);
      delete process.env.EDL_JOB_TOKEN;
      expect(run.code, run.stderr.slice(-3000)).toBe(0);
      const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
      expect(result.state).toBe('succeeded');
      expect(result.evaluations.at(-1).records).toBe(300);
      expect(result.evaluations.at(-1).metrics.accuracy).toBeGreaterThan(0.5);
      expect(preempted).toBe('census-worker-0');
      expect(result.workers).toMatchObject({
        launched: 3,
        relaunched: 1,
        preempted: 1,
        failed: 0,
        running: 0,
      });
      // The relaunched worker is a new worker: its own id, and it logged its own progress.
      expect(cluster.server.get('pods', 'ml', 'census-worker-2')?.metadata.labels['edl.dev/worker-id']).toBe(
        'worker-2',
      );
    } finally {
      await cluster.close();
    }
  }, 180_000);
});
