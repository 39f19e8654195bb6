import type { OptimizerConfig } from '@edl/master';
import type { OptimizerSpec } from '@edl/worker';
import { WorkerError } from '@edl/worker';

const PARAMS: Record<OptimizerSpec['name'], readonly string[]> = {
  sgd: ['learningRate'],
  momentum: ['learningRate', 'momentum', 'nesterov'],
  adam: ['learningRate', 'beta1', 'beta2', 'epsilon'],
};

/**
 * The master's optimizer configuration from a model definition's `optimizer`. An unknown
 * parameter (`learning_rate` for `learningRate`) is an error rather than a silently ignored value.
 */
export function toOptimizerConfig(spec: OptimizerSpec, source: string): OptimizerConfig {
  const known = PARAMS[spec.name];
  for (const key of Object.keys(spec.params)) {
    if (!known.includes(key)) {
      throw new WorkerError(
        'MODEL_DEF_INVALID',
        `Expected one of ${known.join(', ')} for optimizer.params of ${spec.name} in ${source} but received '${key}'`,
      );
    }
  }
  const p = spec.params as Readonly<Record<string, number>>;
  const pick = (name: string) => (p[name] === undefined ? {} : { [name]: p[name] });
  switch (spec.name) {
    case 'sgd':
      return { type: 'sgd', ...pick('learningRate') };
    case 'momentum':
      return {
        type: 'momentum',
        ...pick('learningRate'),
        ...pick('momentum'),
        ...(p.nesterov === undefined ? {} : { nesterov: Boolean(p.nesterov) }),
      };
    case 'adam':
      return {
        type: 'adam',
        ...pick('learningRate'),
        ...pick('beta1'),
        ...pick('beta2'),
        ...pick('epsilon'),
      };
  }
}
