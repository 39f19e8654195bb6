import { tf, tfl } from '@edl/worker';

/**
 * The factorization-machine part of DeepFM (Guo et al., 2017): inputs `[embeddings, linear]`, the
 * `[batch, fields, dim]` embeddings of an Example's ids and their `[batch, fields, 1]` first-order
 * weights; output `[batch, 1]`, the first-order sum plus every pair of fields' inner product, as
 * `0.5 * sum_k ((sum_f e_fk)^2 - sum_f e_fk^2)`. No weights of its own: it reads the embeddings the
 * deep part reads too.
 */
export class FactorizationMachine extends tfl.layers.Layer {
  static readonly className = 'EdlFactorizationMachine';

  override computeOutputShape(inputShape: tfl.Shape | tfl.Shape[]): tfl.Shape {
    const first = (Array.isArray(inputShape[0]) ? inputShape[0] : inputShape) as tfl.Shape;
    return [first[0] ?? null, 1];
  }

  override call(inputs: tf.Tensor | tf.Tensor[]): tf.Tensor {
    if (!Array.isArray(inputs) || inputs.length !== 2)
      throw new TypeError(
        `Expected [embeddings, linear] as the inputs of factorization machine layer '${this.name}'`,
      );
    const [embeddings, linear] = inputs as [tf.Tensor3D, tf.Tensor3D];
    return tf.tidy(() => {
      const sum = tf.sum(embeddings, 1);
      const sumOfSquares = tf.sum(tf.square(embeddings), 1);
      const pairs = tf.mul(0.5, tf.sum(tf.sub(tf.square(sum), sumOfSquares), 1, true));
      return tf.add(tf.sum(linear, 1), pairs);
    });
  }
}

tf.serialization.registerClass(FactorizationMachine);
