/** `edl k8s` with `--num-ps`: the parameter-server options, from the command line to the shard pods. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPsPod, buildPsService } from '@edl/master/kubernetes';
import { loadAllYaml } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { waitFor } from '../../master/test/helpers.js';
import { kubeConfigFor, startFakeCluster } from '../../master/test/kubernetes/fixtures/fake-cluster.js';
import { loadLibs } from '../src/k8s/cluster.js';
import { parameterServerTemplate, parseMasterPodArgs, sharedPodBasics } from '../src/k8s/master-pod.js';
import { runEdl } from './helpers/run-edl.js';

/** The built CLI: `edl k8s manifest` needs no cluster. */
const edl = (args: readonly string[]) => runEdl(args);

const JOB = ['--image', 'registry.example.com/edl:1', '--namespace', 'ml', '--job-name', 'ctr'];
const PS = [
  '--ps-cpu',
  '2',
  '--ps-memory',
  '8Gi',
  '--ps-priority-class',
  'edl-ps',
  '--ps-service-account',
  'edl-ps-account',
];
const TRAIN = ['--model-def', 'deepfm', '--training-data', '/data/clicks', '--checkpoint-dir', '/data/ckpt'];

describe('edl k8s with --num-ps', () => {
  it('passes the --ps-* options to the master pod, which builds the shard pods from them', async () => {
    const run = await edl([
      'k8s',
      'manifest',
      ...JOB,
      ...PS,
      '--data-claim',
      'edl-data',
      ...TRAIN,
      '--num-ps',
      '2',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // biome-ignore lint/suspicious/noExplicitAny: YAML documents, checked field by field.
    const master = (loadAllYaml(run.stdout) as Array<Record<string, any>>).find((d) => d.kind === 'Pod')!;
    const args: string[] = master.spec.containers[0].args;
    const k8sArgs = args.slice(args.indexOf('master') + 1, args.indexOf('--'));
    expect(args.slice(args.indexOf('--') + 1)).toEqual([...TRAIN, '--num-ps', '2']);

    // What the master pod makes of its own command line.
    const pod = parseMasterPodArgs([...k8sArgs, '--', ...TRAIN, '--num-ps', '2'], {
      EDL_JOB_TOKEN: 'tok',
      EDL_NAMESPACE: 'ml',
    });
    const L = await loadLibs();
    const template = parameterServerTemplate(
      pod,
      {
        jobName: pod.jobName,
        image: pod.image,
        command: ['node'],
        tokenSecret: { name: 'ctr-token', key: 'token' },
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'edl-data' } }],
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      },
      ['node', '/app/packages/cli/dist/bin/edl.js'],
      { parameterStore: { optimizer: { type: 'adagrad', learningRate: 0.05 } } },
      L,
    );
    const shard = buildPsPod({ ...template, namespace: 'ml' }, 1, 0);
    expect(shard.spec).toMatchObject({
      serviceAccountName: 'edl-ps-account',
      priorityClassName: 'edl-ps',
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'edl-data' } }],
    });
    const container = shard.spec!.containers[0]!;
    expect(container.resources).toEqual({
      requests: { cpu: '2', memory: '8Gi' },
      limits: { cpu: '2', memory: '8Gi' },
    });
    expect(container.args?.slice(0, 6)).toEqual([
      '/app/packages/cli/dist/bin/edl.js',
      'ps',
      '--shard-index',
      '1',
      '--num-shards',
      '2',
    ]);
    expect(container.args).toContain('{"type":"adagrad","learningRate":0.05}');
  });

  it('the shards take the workers service account unless --ps-service-account is given', async () => {
    const pod = parseMasterPodArgs(
      [
        '--job-name',
        'ctr',
        '--image',
        'i',
        '--worker-service-account',
        'irsa',
        '--',
        ...TRAIN,
        '--num-ps',
        '1',
      ],
      { EDL_JOB_TOKEN: 'tok', EDL_NAMESPACE: 'ml' },
    );
    const template = parameterServerTemplate(
      pod,
      { jobName: 'ctr', image: 'i', tokenSecret: { name: 'ctr-token', key: 'token' } },
      ['edl'],
      { parameterStore: { optimizer: { type: 'sgd', learningRate: 0.1 } } },
      await loadLibs(),
    );
    expect(template.serviceAccountName).toBe('irsa');
    expect(template.priorityClassName).toBeUndefined();
    expect(template.numShards).toBe(1);
  });

  it('rejects a bad priority class name and a bad quantity for the shards', async () => {
    for (const [args, message] of [
      [
        ['--ps-priority-class', 'High_Priority', ...TRAIN, '--num-ps', '2'],
        "edl k8s: Expected a Kubernetes object name for --ps-priority-class but received 'High_Priority'",
      ],
      [
        ['--ps-memory', 'lots', ...TRAIN, '--num-ps', '2'],
        "edl k8s: Expected a Kubernetes quantity (e.g. 500m, 2, 4Gi) for --ps-memory but received 'lots'",
      ],
    ] as const) {
      const run = await edl(['k8s', 'manifest', ...JOB, ...args]);
      expect(run.code).toBe(2);
      expect(run.stderr.split('\n')[0]).toBe(message);
    }
  });

  it('an s3:// checkpoint dir needs no volume: the shard pods get the credentials Secret, account and endpoint', async () => {
    const train = [
      '--model-def',
      'deepfm',
      '--training-data',
      's3://b/clicks/',
      '--checkpoint-dir',
      's3://b/ckpt/',
      '--s3-endpoint',
      'http://minio.ml.svc:9000',
      '--num-ps',
      '2',
    ];
    const credentials = ['--s3-credentials-secret', 'edl-s3', '--worker-service-account', 'irsa'];
    const run = await edl(['k8s', 'manifest', ...JOB, ...credentials, ...train]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // biome-ignore lint/suspicious/noExplicitAny: YAML documents, checked field by field.
    const documents = loadAllYaml(run.stdout) as Array<Record<string, any>>;
    expect(documents.some((d) => d.kind === 'PersistentVolumeClaim')).toBe(false);
    const master = documents.find((d) => d.kind === 'Pod')!;
    expect(master.spec.volumes ?? []).toEqual([]);
    const args: string[] = master.spec.containers[0].args;
    const k8sArgs = args.slice(args.indexOf('master') + 1, args.indexOf('--'));

    const pod = parseMasterPodArgs([...k8sArgs, '--', ...train], {
      EDL_JOB_TOKEN: 'tok',
      EDL_NAMESPACE: 'ml',
    });
    const command = ['node', '/app/packages/cli/dist/bin/edl.js'];
    const template = parameterServerTemplate(
      pod,
      sharedPodBasics(pod, command, {}),
      command,
      { parameterStore: { optimizer: { type: 'sgd', learningRate: 0.1 } } },
      await loadLibs(),
    );
    const shard = buildPsPod({ ...template, namespace: 'ml' }, 0, 1, { dir: 's3://b/ckpt/', version: 40 });
    expect(shard.spec?.serviceAccountName).toBe('irsa');
    expect(shard.spec?.volumes ?? []).toEqual([]);
    const container = shard.spec!.containers[0]!;
    expect(container.envFrom).toEqual([{ secretRef: { name: 'edl-s3' } }]);
    const shardArgs = container.args ?? [];
    expect(shardArgs[shardArgs.indexOf('--s3-endpoint') + 1]).toBe('http://minio.ml.svc:9000');
    expect(shardArgs.slice(shardArgs.indexOf('--restore-dir'))).toEqual([
      '--restore-dir',
      's3://b/ckpt/',
      '--restore-version',
      '40',
    ]);
  });

  it('deploy/k8s/ps-priority-class.yaml is a PriorityClass above the workers (who carry none)', () => {
    const path = fileURLToPath(new URL('../../../deploy/k8s/ps-priority-class.yaml', import.meta.url));
    // biome-ignore lint/suspicious/noExplicitAny: one YAML document, checked field by field.
    const [priorityClass] = loadAllYaml(readFileSync(path, 'utf8')) as Array<Record<string, any>>;
    expect(priorityClass).toMatchObject({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'edl-ps' },
      globalDefault: false,
    });
    expect(priorityClass?.value).toBeGreaterThan(0);
  });

  it('edl k8s status counts the parameter-server pods, edl k8s delete takes their Services too', async () => {
    const cluster = await startFakeCluster({ mode: 'idle', startDelayMs: 5 });
    const dir = mkdtempSync(join(tmpdir(), 'edl-k8s-ps-'));
    try {
      const kubeconfig = join(dir, 'kubeconfig.json');
      writeFileSync(kubeconfig, kubeConfigFor(cluster.server.url).exportConfig());
      const { server } = cluster;
      server.create('pods', 'edl', {
        metadata: { name: 'ctr-master', labels: { 'edl.dev/job': 'ctr', 'edl.dev/role': 'master' } },
        spec: { containers: [{ name: 'master', image: 'i' }] },
      });
      const template = {
        jobName: 'ctr',
        namespace: 'edl',
        image: 'i',
        args: ['ps'],
        numShards: 2,
        optimizer: { type: 'sgd' as const, learningRate: 0.1 },
        seed: 0,
        tokenSecret: { name: 'ctr-token', key: 'token' },
      };
      for (const index of [0, 1]) {
        server.create('pods', 'edl', buildPsPod(template, index, 0) as Record<string, unknown>);
        server.create('services', 'edl', buildPsService('ctr', 'edl', index) as Record<string, unknown>);
      }
      await waitFor(() => cluster.kubelet.running().length === 3, 'the pods running');
      const status = await edl(['k8s', 'status', 'ctr', '--kubeconfig', kubeconfig]);
      expect(status.stderr).toBe('');
      expect(status.stdout.split('\n')[0]).toBe(
        'job ctr (namespace edl): master Running; workers none; parameter servers 2 Running',
      );
      expect(status.stdout).toMatch(/ctr-ps-1-0 +ps +Running/);
      const deleted = await edl(['k8s', 'delete', 'ctr', '--kubeconfig', kubeconfig]);
      expect(deleted.stderr).toBe('');
      expect(deleted.stdout).toBe(
        'deleted pod/ctr-master pod/ctr-ps-0-0 pod/ctr-ps-1-0 service/ctr-ps-0 service/ctr-ps-1\n',
      );
      expect(server.get('services', 'edl', 'ctr-ps-0')).toBeUndefined();
    } finally {
      await cluster.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
