import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ProgressBar } from '../src/job/progress.js';

function capture() {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { stream, text: () => text };
}

describe('ProgressBar (terminal progress of edl train)', () => {
  it('redraws one line with phase, epoch, records, loss, version and throughput', async () => {
    const out = capture();
    const bar = new ProgressBar(out.stream);
    bar.update({
      phase: 'training',
      epoch: 1,
      numEpochs: 4,
      recordsDone: 300,
      recordsTotal: 1200,
      loss: 0.51234,
      modelVersion: 7,
    });
    bar.log('warn: a worker restarted');
    bar.update({
      phase: 'training',
      epoch: 3,
      numEpochs: 4,
      recordsDone: 1300,
      recordsTotal: 1200,
      modelVersion: 9,
    });
    bar.clear();
    await new Promise((resolve) => setImmediate(resolve));
    const frames = out.text().split('\r\x1b[2K');
    expect(frames[1]).toMatch(
      /^training {2}epoch 2\/4 {2}\[#{6}-{18}\] {2}300\/1200 records {2}loss 0\.5123 {2}v7 {2}\d+ rec\/s$/,
    );
    // log() clears the bar, prints its line; the next update draws the bar below it.
    expect(frames[2]).toBe('warn: a worker restarted\n');
    // Never more than the total, however the master counts evaluation records.
    expect(frames[3]).toMatch(/^training {2}epoch 4\/4 {2}\[#{24}\] {2}1200\/1200 records {2}v9 /);
    expect(frames).toHaveLength(5);
    expect(frames[4]).toBe('');
  });
});
