/**
 * Model definition module (`--model-def`) of the CIFAR-10 CNN of ElasticDL's model zoo:
 * three blocks of two conv + batch norm + ReLU, max pooling and dropout, then a softmax layer.
 */
import { cifar10Definition } from './definition.js';

// The loader takes a default export object as the definition (see --model-def in docs/cli.md).
export default cifar10Definition();
