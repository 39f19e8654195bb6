import type { CommandIO } from '../command.js';
import type { ProgressBar } from './progress.js';

/** Dawn's notice about its own limits, printed whenever the webgpu package probes an adapter. */
const DAWN_NOISE = /^Warning: maxDynamic\w+ artificially reduced/;

/**
 * What a local job shows of its workers' output lines: on a terminal, only their warnings and
 * errors (and the backend each selected) above the progress bar; otherwise every line on stderr.
 * It also keeps the last loss a worker reported, for the progress bar.
 */
export class WorkerOutput {
  readonly #io: CommandIO;
  readonly #bar: ProgressBar | undefined;
  /** Set while the workers' lines would only repeat an error the master reports. */
  muted = false;
  /** Set once the job's modules are loaded; a worker's line before that is shown as it came. */
  formatLine: ((line: string, color: boolean) => string) | undefined;
  /** The loss in the last worker line that carried one. */
  lastLoss: number | undefined;

  constructor(io: CommandIO, bar: ProgressBar | undefined) {
    this.#io = io;
    this.#bar = bar;
  }

  /** Takes one output line of worker `workerId`. */
  readonly onOutput = (workerId: string, line: string): void => {
    if (this.muted) return;
    if (DAWN_NOISE.test(line)) return;
    let event: Record<string, unknown> | undefined;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      event = undefined;
    }
    if (event !== undefined && typeof event.loss === 'number') this.lastLoss = event.loss;
    const bar = this.#bar;
    if (bar !== undefined) {
      if (event === undefined) bar.log(`[${workerId}] ${line}`);
      else if (event.level === 'warn' || event.level === 'error' || event.msg === 'backend.selected') {
        bar.log(this.formatLine === undefined ? line : this.formatLine(line, true));
      }
      return;
    }
    this.#io.stderr.write(event === undefined ? `[${workerId}] ${line}\n` : `${line}\n`);
  };
}
