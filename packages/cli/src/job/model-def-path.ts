import path from 'node:path';
// The zoo's names only: its index loads every model and data generator (pg included).
import { isZooModel, zooModelPath } from '@edl/model-zoo/zoo';

/** The file of a `--model-def`: a zoo model name (cifar10, cifar10-small, census) or a path. */
export function resolveModelDef(spec: string): string {
  return isZooModel(spec) ? zooModelPath(spec) : path.resolve(spec);
}
