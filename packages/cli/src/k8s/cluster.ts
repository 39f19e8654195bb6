/**
 * The Kubernetes client of `edl k8s`, loaded only once every argument has been checked, and what
 * the subcommands share about reaching the cluster.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { type JobArgs, namespaceOf, one, parseJobArgs, type SplitArgs } from './args.js';

/** The libraries a subcommand needs once its arguments are checked. */
export type Libs = typeof import('@edl/master/kubernetes') &
  Pick<typeof import('@kubernetes/client-node'), 'CoreV1Api' | 'dumpYaml'>;

export async function loadLibs(): Promise<Libs> {
  const [kubernetes, k8s] = await Promise.all([
    import('@edl/master/kubernetes'),
    import('@kubernetes/client-node'),
  ]);
  return { ...kubernetes, CoreV1Api: k8s.CoreV1Api, dumpYaml: k8s.dumpYaml };
}

/** The cluster of --kubeconfig and --context (default: $KUBECONFIG, ~/.kube/config). */
export function kubeConfigOf(L: Libs, args: SplitArgs): KubeConfig {
  const kubeconfig = one(args, 'kubeconfig');
  const context = one(args, 'context');
  return L.loadKubeConfig({ ...(kubeconfig ? { kubeconfig } : {}), ...(context ? { context } : {}) });
}

/** The context's namespace, for commands where --namespace is left out. */
export function contextNamespace(L: Libs, args: SplitArgs): string | undefined {
  try {
    const kc = kubeConfigOf(L, args);
    return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  } catch {
    return undefined;
  }
}

/** The API server's own message of a failed request (its Status body), with the HTTP status. */
export function describeError(L: Libs, error: unknown): string {
  const body = (error as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      const status = JSON.parse(body) as { message?: string };
      if (status.message) return `${status.message} (HTTP ${L.statusCodeOf(error)})`;
    } catch {
      // not JSON
    }
  }
  if (body && typeof body === 'object' && 'message' in body)
    return `${String((body as { message: unknown }).message)} (HTTP ${L.statusCodeOf(error)})`;
  return error instanceof Error ? error.message : String(error);
}

/** Checks the options of status / logs / delete, then loads the libraries and the cluster's client. */
export async function connectToJob(argv: string[], extra?: Parameters<typeof parseJobArgs>[1]) {
  const parsed: JobArgs = parseJobArgs(argv, extra);
  const L = await loadLibs();
  const namespace = namespaceOf(parsed.args, contextNamespace(L, parsed.args));
  return { ...parsed, L, namespace, core: kubeConfigOf(L, parsed.args).makeApiClient(L.CoreV1Api) };
}
