import { invalidArgument } from '@edl/common';

/** Returns a finite dataset length, else throws: the operation cannot work on an infinite dataset. */
export function expectFinite(length: number, name: string): number {
  if (!Number.isFinite(length)) invalidArgument('a dataset of finite length', name, length);
  return length;
}
