import type { V1Pod } from '@kubernetes/client-node';
import type { PodApi, PodWatchEvent, WatchHandle } from './pod-api.js';
import { statusCodeOf } from './pod-api.js';

/** What a {@link PodWatcher} reports. */
export interface PodWatcherListener {
  /** A list request is about to start (changes made before now will be in it). */
  listing?(): void;
  /** A full list: every pod that matches now. Pods known before and missing here are gone. */
  synced(pods: readonly V1Pod[]): void;
  /** One change, in resourceVersion order. */
  changed(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: V1Pod): void;
  /** Something worth a log line (a dropped watch, a re-list). */
  notice?(message: string, fields?: Record<string, unknown>): void;
}

/** Counters, for status pages and tests. */
export interface PodWatcherStats {
  /** Full lists made (the first one included). */
  lists: number;
  /** Watches opened. */
  watches: number;
  /** Watches dropped because nothing came for `idleTimeoutMs`. */
  idle: number;
  /** Watches resumed from the last resourceVersion after the stream ended or broke. */
  resumes: number;
  /** 410 Gone answers (each leads to a re-list). */
  gone: number;
  bookmarks: number;
  /** The newest resourceVersion seen (list, event or bookmark). */
  resourceVersion: string;
}

/** Options of {@link PodWatcher}. */
export interface PodWatcherOptions {
  /** First delay before retrying a failed list or watch (doubles up to `maxBackoffMs`; default 100). */
  readonly backoffMs?: number;
  readonly maxBackoffMs?: number;
  /**
   * A watch that delivers nothing (no event, no bookmark) for this long is dropped and resumed
   * (default 360,000 ms: longer than the server's watch timeout plus its bookmark interval). It
   * catches half-open connections, which a node or load-balancer failure leaves behind and which
   * would otherwise hang the watch without an error.
   */
  readonly idleTimeoutMs?: number;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * List-then-watch of the pods matching a label selector, correct with respect to resourceVersion
 * (the informer pattern without a cache): list, then watch from the list's resourceVersion; every
 * event and BOOKMARK moves the last seen resourceVersion; a watch that ends or breaks is resumed
 * from it, so that no event is missed or seen twice; `410 Gone` (the version was compacted away,
 * as an HTTP status or an ERROR event) forces a re-list, which the listener reconciles.
 * resourceVersions are treated as opaque strings, never compared.
 */
export class PodWatcher {
  readonly #api: PodApi;
  readonly #selector: string;
  readonly #listener: PodWatcherListener;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #idleTimeoutMs: number;
  #handle: WatchHandle | undefined;
  #stopped = false;
  #failures = 0;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #cancel: (() => void) | undefined;
  readonly stats: PodWatcherStats = {
    lists: 0,
    watches: 0,
    idle: 0,
    resumes: 0,
    gone: 0,
    bookmarks: 0,
    resourceVersion: '',
  };

  constructor(
    api: PodApi,
    labelSelector: string,
    listener: PodWatcherListener,
    options: PodWatcherOptions = {},
  ) {
    this.#api = api;
    this.#selector = labelSelector;
    this.#listener = listener;
    this.#backoffMs = options.backoffMs ?? 100;
    this.#maxBackoffMs = options.maxBackoffMs ?? 5_000;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 360_000;
  }

  /** Lists once (so that the listener knows the current pods) and keeps watching in the background. */
  async start(): Promise<void> {
    await this.#list();
    this.#loop = this.#run();
  }

  /** Closes the watch; no callback follows. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#handle?.abort();
    this.#cancel?.();
    this.#wake?.();
    await this.#loop;
  }

  async #list(): Promise<void> {
    this.#listener.listing?.();
    const { items, resourceVersion } = await this.#api.list(this.#selector);
    this.stats.lists++;
    this.stats.resourceVersion = resourceVersion;
    this.#listener.synced(items);
  }

  async #run(): Promise<void> {
    let needList = false;
    while (!this.#stopped) {
      try {
        if (needList) {
          await this.#list();
          needList = false;
        }
        const outcome = await this.#watchOnce();
        if (outcome === 'gone') {
          this.stats.gone++;
          needList = true;
          this.#listener.notice?.('pod watch: resourceVersion too old (410 Gone), re-listing', {
            resourceVersion: this.stats.resourceVersion,
          });
          continue;
        }
        if (outcome === 'stopped') return;
        // 'ended': the server closed the stream (timeout, restart): resume where we were, at
        // once unless it keeps closing empty streams right away.
        this.stats.resumes++;
        if (outcome === 'ended-empty') await this.#pause(this.#backoffMs);
      } catch (error) {
        if (this.#stopped) return;
        if (statusCodeOf(error) === 410) {
          this.stats.gone++;
          needList = true;
          continue;
        }
        this.#failures++;
        const delay = Math.min(this.#maxBackoffMs, this.#backoffMs * 2 ** Math.min(this.#failures - 1, 16));
        this.#listener.notice?.(`pod watch failed, retrying in ${delay} ms: ${(error as Error).message}`, {
          resourceVersion: this.stats.resourceVersion,
        });
        await this.#pause(delay);
        if (!needList) this.stats.resumes++;
      }
    }
  }

  #pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#wake = resolve;
      void sleep(ms).then(resolve);
    });
  }

  /** One watch connection; resolves when it ends, rejects when it broke. */
  #watchOnce(): Promise<'ended' | 'ended-empty' | 'gone' | 'stopped'> {
    return new Promise((resolve, reject) => {
      let settled = false;
      let events = 0;
      let idle: NodeJS.Timeout | undefined;
      const finish = (outcome: 'ended' | 'ended-empty' | 'gone' | 'stopped' | Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(idle);
        this.#cancel = undefined;
        this.#handle?.abort();
        this.#handle = undefined;
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const onEvent = (event: PodWatchEvent) => {
        if (settled) return;
        this.#failures = 0;
        events++;
        idle?.refresh();
        if (event.type === 'ERROR') {
          if (event.object.code === 410) finish('gone');
          else
            finish(
              Object.assign(new Error(`watch error: ${event.object.message ?? 'unknown'}`), {
                statusCode: event.object.code,
              }),
            );
          return;
        }
        const rv = event.object.metadata?.resourceVersion;
        if (rv !== undefined && rv !== '') this.stats.resourceVersion = rv;
        if (event.type === 'BOOKMARK') {
          this.stats.bookmarks++;
          return;
        }
        this.#listener.changed(event.type, event.object);
      };
      const onDone = (error: (Error & { statusCode?: number }) | undefined) => {
        if (this.#stopped) finish('stopped');
        else if (error === undefined) finish(events > 0 ? 'ended' : 'ended-empty');
        else if (statusCodeOf(error) === 410) finish('gone');
        else finish(error);
      };
      this.#cancel = () => finish('stopped');
      idle = setTimeout(() => {
        this.stats.idle++;
        this.#listener.notice?.(`pod watch silent for ${this.#idleTimeoutMs} ms, reconnecting`, {
          resourceVersion: this.stats.resourceVersion,
        });
        finish('ended');
      }, this.#idleTimeoutMs);
      idle.unref();
      this.stats.watches++;
      this.#api.watch(this.#selector, this.stats.resourceVersion, onEvent, onDone).then(
        (handle) => {
          if (settled || this.#stopped) {
            handle.abort();
            if (this.#stopped) finish('stopped');
          } else this.#handle = handle;
        },
        (error: unknown) => finish(error instanceof Error ? error : new Error(String(error))),
      );
    });
  }
}

/**
 * Stamps that tell a manager which of the pods it created a list must hold: a pod whose create
 * call finished before the list began and is missing from it is gone.
 */
export class CreationClock {
  #stamp = 0;
  #listStamp = 0;

  /** Marks a finished create call; returns its stamp. */
  created(): number {
    return ++this.#stamp;
  }

  /** Whether a list that began after the create of stamp `createdAt` must hold the pod. */
  listedAfter(createdAt: number): boolean {
    return createdAt <= this.#listStamp;
  }

  /** A list is about to start. */
  listing(): void {
    this.#listStamp = this.#stamp;
  }
}

/** What a manager of its own pods hears from {@link watchOwnPods}. */
export interface OwnPodsListener {
  /** A full list (see {@link PodWatcherListener.synced}). */
  synced(pods: readonly V1Pod[]): void;
  /** One pod changed; `deleted` for a DELETED event. */
  observe(pod: V1Pod, deleted: boolean): void;
  /** A notice for the log. */
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** A {@link PodWatcher} of the pods a manager creates (workers, parameter servers), lists stamped by `clock`. */
export function watchOwnPods(
  api: PodApi,
  labelSelector: string,
  clock: CreationClock,
  listener: OwnPodsListener,
  options?: PodWatcherOptions,
): PodWatcher {
  return new PodWatcher(
    api,
    labelSelector,
    {
      listing: () => clock.listing(),
      synced: (pods) => listener.synced(pods),
      changed: (type, pod) => listener.observe(pod, type === 'DELETED'),
      notice: (message, fields) => listener.warn(message, fields),
    },
    options,
  );
}
