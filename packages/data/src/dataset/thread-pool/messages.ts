import type { JsonValue } from '../../protocols.js';

/** What a thread is started with: the function to import, and the JSON passed to every call. */
export interface ThreadData {
  readonly moduleUrl: string;
  readonly exportName: string;
  readonly args: JsonValue;
}

/** One element to map. */
export interface ThreadJob {
  readonly id: number;
  readonly index: number;
  readonly value: unknown;
}

/** A job's answer from a thread. */
export type ThreadReply =
  | {
      readonly id: number;
      readonly ok: true;
      readonly value: unknown;
      /** Time (ms) the thread spent on the job: the call and packing its result, not the queue. */
      readonly workMs: number;
    }
  | {
      readonly id: number;
      readonly ok: false;
      readonly error: { name: string; message: string; stack?: string };
    };

/** The message of a module export that is not a function (the same on a thread and inline). */
export function notAFunctionMessage(data: ThreadData, module: Record<string, unknown>): string {
  const names = Object.keys(module).join(', ') || 'none';
  return `Export ${data.exportName} of ${data.moduleUrl} is not a function (exports: ${names})`;
}
