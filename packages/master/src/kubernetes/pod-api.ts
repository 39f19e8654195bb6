import { CoreV1Api, type KubeConfig, type V1Pod, type V1Status, Watch } from '@kubernetes/client-node';

/** One event of a pod watch, as the API server streams it. */
export type PodWatchEvent =
  | { readonly type: 'ADDED' | 'MODIFIED' | 'DELETED'; readonly object: V1Pod }
  | { readonly type: 'BOOKMARK'; readonly object: V1Pod }
  | { readonly type: 'ERROR'; readonly object: V1Status };

/** A running watch; `abort()` closes its connection (and `onDone` is not called for it). */
export interface WatchHandle {
  abort(): void;
}

/**
 * The part of the Kubernetes API the instance manager uses: pods of one namespace. The real one
 * ({@link createPodApi}) is `@kubernetes/client-node`; tests use it too, against a fake server.
 */
export interface PodApi {
  readonly namespace: string;
  create(pod: V1Pod): Promise<V1Pod>;
  /** Deletes a pod gracefully; a pod already gone is no error. */
  delete(name: string, gracePeriodSeconds?: number): Promise<void>;
  /** Lists pods matching a label selector, with the list's resourceVersion. */
  list(labelSelector: string): Promise<{ items: V1Pod[]; resourceVersion: string }>;
  /**
   * Watches pods from `resourceVersion` with bookmarks. `onDone` is called once when the stream
   * ends: `undefined` for a clean end, else the error (its `statusCode` is 410 for Gone).
   */
  watch(
    labelSelector: string,
    resourceVersion: string,
    onEvent: (event: PodWatchEvent) => void,
    onDone: (error: (Error & { statusCode?: number }) | undefined) => void,
  ): Promise<WatchHandle>;
}

/** HTTP status of an error from the client, if any. */
export function statusCodeOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const e = error as { code?: unknown; statusCode?: unknown };
  if (typeof e.statusCode === 'number') return e.statusCode;
  if (typeof e.code === 'number') return e.code;
  return undefined;
}

/** Options of {@link createPodApi}. */
export interface PodApiOptions {
  /**
   * Seconds after which the server ends a watch (the manager then resumes it from its last
   * resourceVersion). Default 300, randomised by up to 10% so that many masters do not reconnect
   * at once.
   */
  readonly watchTimeoutSeconds?: number;
}

/** The {@link PodApi} of a namespace through `@kubernetes/client-node` (1.4.x). */
export function createPodApi(kubeConfig: KubeConfig, namespace: string, options: PodApiOptions = {}): PodApi {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const watcher = new Watch(kubeConfig);
  const timeout = options.watchTimeoutSeconds ?? 300;
  return {
    namespace,
    create: (pod) => core.createNamespacedPod({ namespace, body: pod }),
    async delete(name, gracePeriodSeconds) {
      try {
        await core.deleteNamespacedPod({
          name,
          namespace,
          ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}),
        });
      } catch (error) {
        if (statusCodeOf(error) !== 404) throw error;
      }
    },
    async list(labelSelector) {
      const list = await core.listNamespacedPod({ namespace, labelSelector });
      return { items: list.items, resourceVersion: list.metadata?.resourceVersion ?? '' };
    },
    async watch(labelSelector, resourceVersion, onEvent, onDone) {
      let aborted = false;
      const controller = await watcher.watch(
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        {
          labelSelector,
          resourceVersion,
          allowWatchBookmarks: true,
          timeoutSeconds: Math.round(timeout * (0.9 + Math.random() * 0.1)),
        },
        (type: string, object: unknown) => {
          if (!aborted) onEvent({ type, object } as PodWatchEvent);
        },
        (error: unknown) => {
          if (aborted) return;
          aborted = true;
          onDone(error ? (error as Error & { statusCode?: number }) : undefined);
        },
      );
      return {
        abort() {
          aborted = true;
          controller.abort();
        },
      };
    },
  };
}
