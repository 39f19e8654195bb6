// The live view's task table: each row's todo + doing + done is its total, and tasks in flight are
// shown on the newest row of their kind (a worker may hold a task of the next epoch, or a training
// task while an evaluation round runs).
import { describe, expect, it } from 'vitest';
import { TaskRows } from '../src/status/task-rows.js';

function rows(): TaskRows {
  const table = new TaskRows();
  table.epochStarted(0, 4);
  for (let i = 0; i < 3; i++) table.count({ kind: 'training', epoch: 0 }, 'done', () => 0);
  table.evaluationStarted(1, 2);
  return table;
}

describe('TaskRows.snapshot', () => {
  it('shows training tasks on the epoch row and evaluation tasks on the round, each within its total', () => {
    const snapshot = rows().snapshot({ state: 'running', doingByKind: { training: 1, evaluation: 2 } });
    expect(snapshot.map((r) => [r.label, r.todo, r.doing, r.done, r.total])).toEqual([
      ['epoch 1', 0, 1, 3, 4],
      ['evaluation 1', 0, 2, 0, 2],
    ]);
  });

  it('never shows more tasks in flight on a row than it has left (the sum stays the total)', () => {
    // Three evaluation tasks in flight on a round of two (the job's counts taken a moment apart).
    const snapshot = rows().snapshot({ state: 'running', doingByKind: { evaluation: 3 } });
    for (const row of snapshot) expect(row.todo + row.doing + row.done).toBe(row.total);
    expect(snapshot.find((r) => r.label === 'evaluation 1')?.doing).toBe(2);
  });

  it('shows nothing in flight once the job ended', () => {
    const snapshot = rows().snapshot({ state: 'succeeded', doingByKind: {} });
    expect(snapshot.every((r) => r.doing === 0)).toBe(true);
  });
});
