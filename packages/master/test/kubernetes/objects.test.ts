import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  buildJobObjects,
  buildRbacObjects,
  masterServiceAddress,
  resourcesFor,
} from '../../src/kubernetes/job-objects.js';
import { checkJobName, workerSelector } from '../../src/kubernetes/labels.js';
import { podOutcome } from '../../src/kubernetes/pod-outcome.js';
import { buildPsPod, buildPsService, psPodName, psServiceAddress } from '../../src/kubernetes/ps-pod.js';
import { buildWorkerPod } from '../../src/kubernetes/worker-pod.js';

const failed = (exitCode: number, reason: string, podReason?: string): V1Pod => ({
  metadata: { name: 'p' },
  status: {
    phase: 'Failed',
    ...(podReason ? { reason: podReason } : {}),
    containerStatuses: [
      {
        name: 'worker',
        image: 'i',
        imageID: '',
        ready: false,
        restartCount: 0,
        state: { terminated: { exitCode, reason } },
      },
    ],
  },
});

describe('podOutcome: what ended a worker pod', () => {
  it('tells preemption (always relaunched) from failures (relaunched up to a limit)', () => {
    expect(podOutcome(failed(137, 'Error'))).toEqual({
      kind: 'preempted',
      reason: 'killed from outside: exit code 137 (Error)',
    });
    expect(podOutcome(failed(137, 'OOMKilled'))).toEqual({
      kind: 'failed',
      reason: 'exit code 137 (OOMKilled)',
    });
    expect(podOutcome(failed(1, 'Error'))).toEqual({ kind: 'failed', reason: 'exit code 1 (Error)' });
    expect(podOutcome(failed(137, 'Error', 'Evicted')).kind).toBe('preempted');
    expect(podOutcome(failed(143, 'Error', 'Preempting')).kind).toBe('preempted');
    expect(
      podOutcome({
        status: {
          phase: 'Failed',
          conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler' }],
        },
      }),
    ).toEqual({
      kind: 'preempted',
      reason: 'DisruptionTarget PreemptionByScheduler',
    });
    expect(podOutcome({ status: { phase: 'Running' } })).toEqual({ kind: 'active', phase: 'Running' });
    expect(podOutcome({ status: { phase: 'Running' } }, true)).toEqual({
      kind: 'preempted',
      reason: 'pod deleted while Running',
    });
    expect(podOutcome({ metadata: { deletionTimestamp: new Date() }, status: { phase: 'Pending' } })).toEqual(
      {
        kind: 'preempted',
        reason: 'pod deleted while Pending',
      },
    );
    // A pod that succeeded and is then deleted (garbage collection) stays a success.
    expect(podOutcome({ status: { phase: 'Succeeded' } }, true)).toEqual({
      kind: 'succeeded',
      reason: 'Succeeded',
    });
  });
});

describe('buildWorkerPod', () => {
  it('labels, env, token secret, resources, restart policy and owner', () => {
    const pod = buildWorkerPod(
      {
        jobName: 'j',
        namespace: 'ns',
        image: 'img',
        args: ['worker', '--model-def', 'cifar10'],
        masterAddress: 'j-master.ns.svc:50001',
        tokenSecret: { name: 'j-token', key: 'token' },
        owner: { name: 'j-master', uid: 'u' },
        resources: resourcesFor({ cpu: '2', memory: '4Gi', gpu: 1 })!,
        env: { EXTRA: '1' },
      },
      'worker-7',
    );
    expect(pod.metadata?.name).toBe('j-worker-7');
    expect(pod.metadata?.labels).toEqual({
      'app.kubernetes.io/name': 'elasticdl-ts',
      'edl.dev/job': 'j',
      'edl.dev/role': 'worker',
      'edl.dev/worker-id': 'worker-7',
    });
    expect(pod.spec?.restartPolicy).toBe('Never');
    expect(pod.spec?.automountServiceAccountToken).toBe(false);
    const container = pod.spec!.containers[0]!;
    expect(container.resources).toEqual({
      requests: { cpu: '2', memory: '4Gi' },
      limits: { cpu: '2', memory: '4Gi', 'nvidia.com/gpu': '1' },
    });
    expect(container.env?.map((e) => e.name)).toEqual([
      'EDL_MASTER_ADDR',
      'EDL_WORKER_ID',
      'EDL_JOB_NAME',
      'EDL_JOB_TOKEN',
      'EDL_POD_NAME',
      'EDL_MASTER_LEASE_MS',
      'EXTRA',
    ]);
    expect(JSON.stringify(pod)).not.toContain('"value":"secret');
    expect(pod.metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: 'j-master', uid: 'u' },
    ]);
    expect(workerSelector('j')).toBe('edl.dev/job=j,edl.dev/role=worker');
  });
});

describe('buildJobObjects (what edl k8s submit creates and edl k8s manifest prints)', () => {
  const objects = buildJobObjects({
    jobName: 'mnist',
    namespace: 'ml',
    image: 'registry/edl:1',
    numWorkers: 4,
    token: 'tok',
    trainArgs: ['--model-def', 'cifar10', '--training-data', '/data/train'],
    workerSize: { cpu: '1', memory: '2Gi' },
    masterSize: { memory: '1Gi' },
    dataClaim: 'edl-data',
  });

  it('a Secret with the token, a master pod running edl k8s master, a Service in front of it', () => {
    expect(objects.secret).toMatchObject({
      kind: 'Secret',
      metadata: { name: 'mnist-token', namespace: 'ml' },
      stringData: { token: 'tok' },
    });
    const pod = objects.masterPod;
    expect(pod.metadata).toMatchObject({
      name: 'mnist-master',
      namespace: 'ml',
      labels: { 'edl.dev/job': 'mnist', 'edl.dev/role': 'master' },
    });
    expect(pod.spec?.serviceAccountName).toBe('edl-master');
    const c = pod.spec!.containers[0]!;
    expect([...c.command!, ...c.args!]).toEqual([
      'node',
      '/app/packages/cli/dist/bin/edl.js',
      'k8s',
      'master',
      '--job-name',
      'mnist',
      '--image',
      'registry/edl:1',
      '--num-workers',
      '4',
      '--port',
      '50001',
      '--max-relaunches',
      '3',
      '--worker-cpu',
      '1',
      '--worker-memory',
      '2Gi',
      '--data-claim',
      'edl-data',
      '--data-mount-path',
      '/data',
      '--',
      '--model-def',
      'cifar10',
      '--training-data',
      '/data/train',
    ]);
    expect(c.env).toContainEqual({
      name: 'EDL_POD_UID',
      valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } },
    });
    expect(c.env).toContainEqual({
      name: 'EDL_JOB_TOKEN',
      valueFrom: { secretKeyRef: { name: 'mnist-token', key: 'token' } },
    });
    expect(c.resources).toEqual({ requests: { memory: '1Gi' }, limits: { memory: '1Gi' } });
    expect(pod.spec?.volumes).toEqual([{ name: 'data', persistentVolumeClaim: { claimName: 'edl-data' } }]);
    expect(objects.service.spec).toEqual({
      selector: { 'edl.dev/job': 'mnist', 'edl.dev/role': 'master' },
      ports: [{ name: 'grpc', port: 50001, targetPort: 50001 }],
    });
    expect(masterServiceAddress('mnist', 'ml')).toBe('mnist-master.ml.svc:50001');
  });

  it('is pure, and checks its arguments', () => {
    expect(
      buildJobObjects({
        jobName: 'mnist',
        namespace: 'ml',
        image: 'i',
        numWorkers: 1,
        token: 't',
        trainArgs: [],
      }),
    ).toEqual(
      buildJobObjects({
        jobName: 'mnist',
        namespace: 'ml',
        image: 'i',
        numWorkers: 1,
        token: 't',
        trainArgs: [],
      }),
    );
    expect(() => checkJobName('Bad_Name')).toThrow(
      `Expected a lower-case DNS label of at most 40 characters (a-z, 0-9, '-') for jobName but received "Bad_Name"`,
    );
    expect(() =>
      buildJobObjects({
        jobName: 'a',
        namespace: 'ml',
        image: 'i',
        numWorkers: -1,
        token: 't',
        trainArgs: [],
      }),
    ).toThrow('Expected an integer in [0, 10000] for numWorkers but received -1');
  });

  it('RBAC: pods, and services to create (parameter-server shards), with exactly the verbs the master uses', () => {
    const rbac = buildRbacObjects('ml');
    expect(rbac.role.rules).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['create', 'list', 'watch', 'delete'] },
      { apiGroups: [''], resources: ['services'], verbs: ['create'] },
    ]);
    expect(rbac.roleBinding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'edl-master', namespace: 'ml' },
    ]);
    expect(rbac.roleBinding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'edl-master',
    });
  });
});

describe('parameter-server pods and Services (what the master creates for --num-ps)', () => {
  const template = {
    jobName: 'ctr',
    namespace: 'ml',
    image: 'registry/edl:1',
    command: ['node'],
    args: ['/app/packages/cli/dist/bin/edl.js', 'ps'],
    numShards: 2,
    optimizer: { type: 'adam' as const, learningRate: 0.01 },
    seed: 5,
    tokenSecret: { name: 'ctr-token', key: 'token' },
    owner: { name: 'ctr-master', uid: 'u' },
    resources: resourcesFor({ cpu: '2', memory: '8Gi' })!,
    envFromSecrets: ['s3-creds'],
    serviceAccountName: 'edl-ps',
    priorityClassName: 'edl-ps-high',
    volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'edl-data' } }],
    volumeMounts: [{ name: 'data', mountPath: '/data' }],
  };

  it('a pod per launch of a shard: edl ps with its index, the job optimizer and seed, its priority class and credentials', () => {
    const pod = buildPsPod(template, 1, 0);
    expect(pod.metadata?.name).toBe('ctr-ps-1-0');
    expect(psPodName('ctr', 1, 3)).toBe('ctr-ps-1-3');
    expect(pod.metadata?.labels).toEqual({
      'app.kubernetes.io/name': 'elasticdl-ts',
      'edl.dev/job': 'ctr',
      'edl.dev/role': 'ps',
      'edl.dev/ps-index': '1',
    });
    expect(pod.metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: 'ctr-master', uid: 'u' },
    ]);
    expect(pod.spec).toMatchObject({
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      serviceAccountName: 'edl-ps',
      priorityClassName: 'edl-ps-high',
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'edl-data' } }],
    });
    const c = pod.spec!.containers[0]!;
    expect([...c.command!, ...c.args!]).toEqual([
      'node',
      '/app/packages/cli/dist/bin/edl.js',
      'ps',
      '--shard-index',
      '1',
      '--num-shards',
      '2',
      '--host',
      '0.0.0.0',
      '--port',
      '50002',
      '--optimizer',
      '{"type":"adam","learningRate":0.01}',
      '--seed',
      '5',
    ]);
    expect(c.env).toEqual([
      { name: 'EDL_JOB_NAME', value: 'ctr' },
      { name: 'EDL_JOB_TOKEN', valueFrom: { secretKeyRef: { name: 'ctr-token', key: 'token' } } },
      { name: 'EDL_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ]);
    expect(c.envFrom).toEqual([{ secretRef: { name: 's3-creds' } }]);
    expect(c.ports).toEqual([{ name: 'grpc', containerPort: 50002 }]);
    expect(c.readinessProbe).toEqual({ tcpSocket: { port: 'grpc' }, periodSeconds: 2 });
    expect(c.resources).toEqual({
      requests: { cpu: '2', memory: '8Gi' },
      limits: { cpu: '2', memory: '8Gi' },
    });
    expect(c.volumeMounts).toEqual([{ name: 'data', mountPath: '/data' }]);
  });

  it('a relaunched shard starts from the last committed checkpoint', () => {
    const args = buildPsPod({ ...template, port: 6000 }, 0, 2, { dir: '/data/ckpt', version: 40 }).spec!
      .containers[0]!.args!;
    expect(args.slice(args.indexOf('--port'), args.indexOf('--port') + 2)).toEqual(['--port', '6000']);
    expect(args.slice(-4)).toEqual(['--restore-dir', '/data/ckpt', '--restore-version', '40']);
    expect(() => buildPsPod(template, 2, 0)).toThrow(
      'Expected an integer in [0, 1] for index but received 2',
    );
  });

  it('a Service per shard with a stable name and a named port, selecting the shard by index', () => {
    expect(buildPsService('ctr', 'ml', 1, 50002, { name: 'ctr-master', uid: 'u' })).toEqual({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'ctr-ps-1',
        namespace: 'ml',
        labels: { 'app.kubernetes.io/name': 'elasticdl-ts', 'edl.dev/job': 'ctr', 'edl.dev/role': 'ps' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'ctr-master', uid: 'u' }],
      },
      spec: {
        selector: { 'edl.dev/job': 'ctr', 'edl.dev/role': 'ps', 'edl.dev/ps-index': '1' },
        ports: [{ name: 'grpc', port: 50002, targetPort: 'grpc' }],
      },
    });
    expect(psServiceAddress('ctr', 'ml', 1)).toBe('ctr-ps-1.ml.svc:50002');
  });

  it('edl k8s submit passes the parameter-server options on to the master pod', () => {
    const pod = buildJobObjects({
      jobName: 'ctr',
      namespace: 'ml',
      image: 'i',
      numWorkers: 2,
      token: 't',
      trainArgs: ['--num-ps', '2'],
      psSize: { cpu: '2', memory: '8Gi' },
      psPriorityClass: 'edl-ps-high',
      psServiceAccount: 'edl-ps',
      psPort: 6000,
    }).masterPod;
    const args = pod.spec!.containers[0]!.args!;
    expect(args.slice(args.indexOf('--ps-cpu'), args.indexOf('--'))).toEqual([
      '--ps-cpu',
      '2',
      '--ps-memory',
      '8Gi',
      '--ps-priority-class',
      'edl-ps-high',
      '--ps-service-account',
      'edl-ps',
      '--ps-port',
      '6000',
    ]);
    expect(args.slice(args.indexOf('--') + 1)).toEqual(['--num-ps', '2']);
  });
});
