/**
 * Model definition module (`--model-def`) of a narrow CIFAR-10 CNN with the same layer kinds (conv,
 * batch norm, pooling) as the full one, small enough to train in seconds on two CPU cores: what
 * `edl demo` and the tests train.
 */
import { cifar10Definition } from './definition.js';

// No augmentation: this model must learn the synthetic data in a few epochs (demo, tests), and
// random crops and flips slow that down; `cifar10` trains with them.
export default cifar10Definition({
  filters: [8, 16],
  convsPerBlock: 1,
  dropout: 0,
  learningRate: 0.02,
  input: { augment: false },
});
