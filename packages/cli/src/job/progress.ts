/** What the progress line shows. */
export interface ProgressState {
  readonly phase: string;
  readonly epoch: number;
  readonly numEpochs: number;
  readonly recordsDone: number;
  readonly recordsTotal: number;
  readonly loss?: number;
  readonly modelVersion: number;
}

/**
 * A one-line progress bar redrawn in place on a terminal: phase, epoch, records, loss and
 * throughput. `log` prints a line above it.
 */
export class ProgressBar {
  readonly #stream: NodeJS.WritableStream;
  readonly #started = performance.now();
  #drawn = false;

  constructor(stream: NodeJS.WritableStream) {
    this.#stream = stream;
  }

  update(state: ProgressState): void {
    const width = 24;
    const fraction = state.recordsTotal > 0 ? Math.min(1, state.recordsDone / state.recordsTotal) : 0;
    const filled = Math.round(fraction * width);
    const seconds = (performance.now() - this.#started) / 1000;
    const rate = seconds > 0 ? state.recordsDone / seconds : 0;
    const parts = [
      state.phase,
      state.numEpochs > 0 ? `epoch ${Math.min(state.epoch + 1, state.numEpochs)}/${state.numEpochs}` : '',
      `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}]`,
      `${Math.min(state.recordsDone, state.recordsTotal)}/${state.recordsTotal} records`,
      state.loss === undefined ? '' : `loss ${state.loss.toFixed(4)}`,
      `v${state.modelVersion}`,
      `${rate.toFixed(0)} rec/s`,
    ].filter((p) => p !== '');
    this.#stream.write(`\r\x1b[2K${parts.join('  ')}`);
    this.#drawn = true;
  }

  log(line: string): void {
    this.clear();
    this.#stream.write(`${line}\n`);
  }

  clear(): void {
    if (this.#drawn) this.#stream.write('\r\x1b[2K');
    this.#drawn = false;
  }
}
