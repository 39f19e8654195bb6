/**
 * The arguments of `edl k8s`: the Kubernetes options, split from the train options that go on to
 * the master pod, and their checks. Nothing heavy loads here: every argument is checked before the
 * Kubernetes client does.
 */
import type { JobType } from '@edl/master';
import type { ContainerSize, JobObjectsOptions } from '@edl/master/kubernetes';
import { integerValue, jsonStringArrayValue, parseCommandLine } from '../args.js';
import { UsageError } from '../command.js';
import type { JobOptions } from '../job/job-options.js';

/** Options with a value, by subcommand; anything else is a train option. */
export const JOB_K8S_OPTIONS: ReadonlySet<string> = new Set([
  'image',
  'namespace',
  'num-workers',
  'job-name',
  'max-relaunches',
  'worker-cpu',
  'worker-memory',
  'worker-gpu',
  'master-cpu',
  'master-memory',
  'service-account',
  'image-pull-policy',
  'data-claim',
  'data-mount-path',
  'port',
  'kubeconfig',
  'context',
  'edl-command',
  's3-credentials-secret',
  'worker-service-account',
  'ps-cpu',
  'ps-memory',
  'ps-priority-class',
  'ps-service-account',
  'ps-port',
]);
export const MASTER_K8S_OPTIONS: ReadonlySet<string> = new Set([
  ...JOB_K8S_OPTIONS,
  'host',
  'master-address',
  'ps-address',
  'worker-env',
  'delete-grace-seconds',
]);

/** A command line split into Kubernetes options (every value given, in order), flags and train options. */
export interface SplitArgs {
  readonly k8s: Map<string, string[]>;
  readonly flags: Set<string>;
  readonly trainArgs: string[];
}

/**
 * Splits a command line into the Kubernetes options (`--name value` or `--name=value`) and the
 * train options, which are passed on untouched (and checked by edl train's parser). A bare `--`
 * sends everything after it to the train options.
 */
export function splitArgs(
  argv: readonly string[],
  known: ReadonlySet<string>,
  booleans: ReadonlySet<string>,
): SplitArgs {
  const k8s = new Map<string, string[]>();
  const flags = new Set<string>();
  const trainArgs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      trainArgs.push(...argv.slice(i + 1));
      break;
    }
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(arg);
    if (m && booleans.has(m[1] as string)) {
      flags.add(m[1] as string);
      continue;
    }
    if (!m || !known.has(m[1] as string)) {
      trainArgs.push(arg);
      continue;
    }
    const name = m[1] as string;
    let value = m[2];
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) throw new UsageError(`option --${name} needs a value`);
    }
    k8s.set(name, [...(k8s.get(name) ?? []), value]);
  }
  return { k8s, flags, trainArgs };
}

/** The last value of option `--name`. */
export function one(args: SplitArgs, name: string): string | undefined {
  return args.k8s.get(name)?.at(-1);
}

export function integer(
  args: SplitArgs,
  name: string,
  fallback: number,
  min: number,
  max = 1_000_000,
): number {
  const raw = one(args, name);
  return raw === undefined ? fallback : integerValue(raw, `--${name}`, min, max);
}

/** The requests (= limits) of the worker, master or parameter-server container. */
export function size(args: SplitArgs, prefix: 'worker' | 'master' | 'ps'): ContainerSize {
  const cpu = one(args, `${prefix}-cpu`);
  const memory = one(args, `${prefix}-memory`);
  const gpu =
    prefix === 'worker' && one(args, 'worker-gpu') !== undefined
      ? integer(args, 'worker-gpu', 0, 0, 64)
      : undefined;
  const quantity = /^[0-9.]+(m|k|Ki|M|Mi|G|Gi|T|Ti|E|Ei|P|Pi)?$/;
  for (const [name, q] of [
    [`${prefix}-cpu`, cpu],
    [`${prefix}-memory`, memory],
  ] as const) {
    if (q !== undefined && !quantity.test(q))
      throw new UsageError(
        `Expected a Kubernetes quantity (e.g. 500m, 2, 4Gi) for --${name} but received '${q}'`,
      );
  }
  return { ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}), ...(gpu !== undefined ? { gpu } : {}) };
}

/**
 * How the pods get object-store credentials: `--s3-credentials-secret` (a Secret whose keys become
 * AWS_* environment variables of master and workers) and `--worker-service-account` (the workers'
 * account, e.g. one bound to an IAM role by EKS IRSA), each a DNS subdomain name when given.
 */
export function credentialOptions(
  args: SplitArgs,
): Pick<JobObjectsOptions, 'credentialsSecret' | 'workerServiceAccount'> {
  const secret = one(args, 's3-credentials-secret');
  const account = one(args, 'worker-service-account');
  checkObjectNames(args, ['s3-credentials-secret', 'worker-service-account']);
  return {
    ...(secret === undefined ? {} : { credentialsSecret: secret }),
    ...(account === undefined ? {} : { workerServiceAccount: account }),
  };
}

/** Checks that the options named, when given, are Kubernetes object names (DNS subdomains). */
function checkObjectNames(args: SplitArgs, names: readonly string[]): void {
  for (const name of names) {
    const value = one(args, name);
    if (value !== undefined && !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(value)) {
      throw new UsageError(`Expected a Kubernetes object name for --${name} but received '${value}'`);
    }
  }
}

/**
 * The parameter-server pods' options (a job with `--num-ps N` in its train options):
 * `--ps-cpu`/`--ps-memory`, `--ps-priority-class` (a PriorityClass above the workers', created
 * beforehand), `--ps-service-account` (default: the workers') and `--ps-port` (default 50002).
 */
export function parameterServerOptions(
  args: SplitArgs,
): Pick<JobObjectsOptions, 'psSize' | 'psPriorityClass' | 'psServiceAccount' | 'psPort'> {
  checkObjectNames(args, ['ps-priority-class', 'ps-service-account']);
  const psSize = size(args, 'ps');
  const priorityClass = one(args, 'ps-priority-class');
  const account = one(args, 'ps-service-account');
  return {
    ...(Object.keys(psSize).length > 0 ? { psSize } : {}),
    ...(priorityClass === undefined ? {} : { psPriorityClass: priorityClass }),
    ...(account === undefined ? {} : { psServiceAccount: account }),
    ...(one(args, 'ps-port') === undefined ? {} : { psPort: integer(args, 'ps-port', 50002, 1, 65_535) }),
  };
}

export function edlCommand(args: SplitArgs): readonly string[] | undefined {
  const raw = one(args, 'edl-command');
  return raw === undefined ? undefined : jsonStringArrayValue(raw, '--edl-command');
}

export function pullPolicy(args: SplitArgs): JobObjectsOptions['imagePullPolicy'] {
  const p = one(args, 'image-pull-policy');
  if (p === undefined) return undefined;
  if (p !== 'Always' && p !== 'IfNotPresent' && p !== 'Never') {
    throw new UsageError(
      `Expected Always, IfNotPresent or Never for --image-pull-policy but received '${p}'`,
    );
  }
  return p;
}

/** The job type of the data options given (a job on Kubernetes says no more). */
export function jobTypeOf(options: JobOptions): JobType {
  if (options.predictionData !== undefined) return 'prediction';
  if (options.trainingData !== undefined)
    return options.validationData !== undefined ? 'training-with-evaluation' : 'training';
  if (options.validationData !== undefined) return 'evaluation';
  throw new UsageError('no data: give --training-data, --validation-data or --prediction-data');
}

export function namespaceOf(args: SplitArgs, fallback?: string): string {
  const ns = one(args, 'namespace') ?? fallback;
  if (ns === undefined || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns)) {
    throw new UsageError(`Expected a namespace (a DNS label) for --namespace but received '${ns ?? ''}'`);
  }
  return ns;
}

/** What `status`, `logs` and `delete` take: a job name, the cluster, and their own options. */
export interface JobArgs {
  readonly job: string;
  readonly args: SplitArgs;
  readonly tail?: number;
}

/** Parses and checks the arguments of status / logs / delete. */
export function parseJobArgs(
  argv: string[],
  extra: { readonly json?: boolean; readonly worker?: boolean; readonly tail?: boolean } = {},
): JobArgs {
  const { values, positionals } = parseCommandLine(
    argv,
    {
      namespace: { type: 'string' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      ...(extra.json ? { json: { type: 'boolean' } } : {}),
      ...(extra.worker ? { worker: { type: 'string' } } : {}),
      ...(extra.tail ? { tail: { type: 'integer' } } : {}),
    } as const,
    ['the job name'],
  );
  const args: SplitArgs = {
    k8s: new Map(
      Object.entries(values)
        .filter((e): e is [string, string] => typeof e[1] === 'string')
        .map(([k, v]) => [k, [v]]),
    ),
    flags: new Set(Object.keys(values).filter((k) => (values as Record<string, unknown>)[k] === true)),
    trainArgs: [],
  };
  if (values.namespace !== undefined) namespaceOf(args);
  const tail = (values as { tail?: number }).tail;
  return { job: positionals[0] as string, args, ...(tail === undefined ? {} : { tail }) };
}
