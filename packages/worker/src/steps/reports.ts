import { GradientStatus, type TaskRangeRef } from '@edl/proto';
import type { RecordSlice } from '../task-feed.js';

/** The task range a slice of records came from, as a report to the master names it. */
export function toRangeRef(slice: RecordSlice): TaskRangeRef {
  return { taskId: slice.task.id, rangeStart: slice.rangeStart, rangeEnd: slice.rangeEnd };
}

/** Whether the master took a report (a gradient, metrics) now, or had taken it before (a resent one). */
export function isApplied(response: { readonly status: GradientStatus }): boolean {
  return response.status === GradientStatus.ACCEPTED || response.status === GradientStatus.ALREADY_APPLIED;
}
