import { fileURLToPath } from 'node:url';

/** Model definition modules of the zoo, by the name `--model-def` accepts. */
export const ZOO_MODELS = {
  cifar10: 'cifar10/model',
  'cifar10-small': 'cifar10/small-model',
  census: 'census/model',
  'census-wide-deep': 'census/wide-deep-model',
  deepfm: 'deepfm/model',
  'deepfm-dense': 'deepfm/dense-model',
  'tf-example': 'tf-example/model',
  mnist: 'mnist/model',
} as const;

/** A zoo model name. */
export type ZooModelName = keyof typeof ZOO_MODELS;

/** True when `name` names a zoo model. */
export function isZooModel(name: string): name is ZooModelName {
  return Object.hasOwn(ZOO_MODELS, name);
}

/**
 * The file of a zoo model definition module, to pass to worker processes: the compiled `.js` next
 * to this module, or the `.ts` source when running from sources (tests).
 */
export function zooModelPath(name: ZooModelName): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return fileURLToPath(new URL(`./${ZOO_MODELS[name]}${extension}`, import.meta.url));
}
