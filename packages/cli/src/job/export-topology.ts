import { embeddingFeeds, type tf, type tfl } from '@edl/worker';
import type { DenseTable, TableRequest } from './export-tables.js';

/**
 * How one distributed embedding layer of a model becomes standard TensorFlow.js layers in an
 * exported model.
 */
export interface StandardEmbedding {
  /** The distributed layer's name. */
  readonly layer: string;
  /** Rows of the standard layer's `embeddings` weight. */
  readonly inputDim: number;
  readonly outputDim: number;
  readonly combiner: 'sum' | 'mean' | 'sqrtn' | undefined;
  /** With a combiner: the ids per example (the last axis of the layer's `[batch, ids]` input). */
  readonly idsPerExample: number | undefined;
}

/** A distributed embedding layer of a model, before its table's size is known. */
export type ModelEmbedding = Omit<StandardEmbedding, 'inputDim'> & { readonly table: string };

/** A layer of a topology in TensorFlow.js' (Keras') JSON, snake_case as model.json holds it. */
interface LayerJson {
  class_name: string;
  config: Record<string, unknown>;
  name?: string;
  inbound_nodes?: unknown[];
}

/** A node reference of a functional model's JSON: `[layer, nodeIndex, tensorIndex, kwargs]`. */
type NodeRef = [string, number, number, Record<string, unknown>];

const DISTRIBUTED_CLASS = 'EdlDistributedEmbedding';

/**
 * Rewrites `topology` (model.json's `modelTopology`) so that each distributed embedding layer is a
 * standard `Embedding` layer, whose `embeddings` weight the export fills from the shards. A layer
 * with a combiner becomes `Embedding` (`<name>_rows`), `GlobalAveragePooling1D` over an example's
 * ids, and for `sum` and `sqrtn` a `Rescaling` by the ids per example (or its square root), the
 * last one keeping the layer's name so that the layers after it still find it. Returns the new
 * topology and each distributed layer's weight name (`<embedding layer>/embeddings`).
 */
export function standardEmbeddingTopology(
  topology: unknown,
  embeddings: readonly StandardEmbedding[],
): { topology: Record<string, unknown>; weightNames: Map<string, string> } {
  const model = structuredClone(topology) as { class_name: string; config: { layers: LayerJson[] } };
  const byLayer = new Map(embeddings.map((e) => [e.layer, e]));
  const functional = model.class_name !== 'Sequential';
  const taken = new Set(model.config.layers.map((l) => (l.config.name as string) ?? l.name));
  const weightNames = new Map<string, string>();
  const layers: LayerJson[] = [];
  for (const entry of model.config.layers) {
    const spec =
      entry.class_name === DISTRIBUTED_CLASS ? byLayer.get(entry.config.name as string) : undefined;
    if (spec === undefined) {
      layers.push(entry);
      continue;
    }
    const chain = replacementChain(entry, spec, taken);
    weightNames.set(spec.layer, `${(chain[0] as LayerJson).config.name as string}/embeddings`);
    if (functional) linkChain(chain, entry.inbound_nodes ?? []);
    layers.push(...chain);
  }
  model.config.layers = layers;
  return { topology: model as unknown as Record<string, unknown>, weightNames };
}

/** The standard layers of one distributed layer, in order, the last one named as it was. */
function replacementChain(entry: LayerJson, spec: StandardEmbedding, taken: Set<string>): LayerJson[] {
  const name = spec.layer;
  const fresh = (suffix: string) => {
    const candidate = `${name}_${suffix}`;
    if (taken.has(candidate))
      throw new Error(
        `Cannot export distributed embedding layer '${name}': the model already has a layer '${candidate}', the name its standard layers take`,
      );
    taken.add(candidate);
    return candidate;
  };
  const batchInputShape = entry.config.batch_input_shape;
  const embeddingLayer = (layerName: string): LayerJson => ({
    class_name: 'Embedding',
    config: {
      input_dim: spec.inputDim,
      output_dim: spec.outputDim,
      embeddings_initializer: {
        class_name: 'RandomUniform',
        config: { minval: -0.05, maxval: 0.05, seed: null },
      },
      embeddings_regularizer: null,
      activity_regularizer: null,
      embeddings_constraint: null,
      mask_zero: null,
      input_length: null,
      name: layerName,
      trainable: true,
      ...(batchInputShape === undefined ? {} : { batch_input_shape: batchInputShape }),
      dtype: 'float32',
    },
  });
  if (spec.combiner === undefined) return [embeddingLayer(name)];
  const perExample = spec.idsPerExample;
  if (perExample === undefined)
    throw new Error(
      `Cannot export distributed embedding layer '${name}' with combiner '${spec.combiner}': its ids must be [batch, ids per example] with a fixed number of ids per example`,
    );
  const pooled = spec.combiner === 'mean' ? name : fresh('mean');
  const chain: LayerJson[] = [
    embeddingLayer(fresh('rows')),
    { class_name: 'GlobalAveragePooling1D', config: { name: pooled, trainable: true } },
  ];
  if (spec.combiner !== 'mean') {
    // sum = mean x n; sqrtn = sum / sqrt(n) = mean x sqrt(n).
    const scale = spec.combiner === 'sum' ? perExample : Math.sqrt(perExample);
    chain.push({ class_name: 'Rescaling', config: { scale, offset: 0, name, trainable: true } });
  }
  return chain;
}

/**
 * Wires a chain into a functional model's graph: the first layer takes the distributed layer's
 * inputs (`inboundNodes`, one per call of the layer), each next one the previous one's output of
 * the same call.
 */
function linkChain(chain: LayerJson[], inboundNodes: unknown[]): void {
  chain.forEach((layer, i) => {
    const layerName = layer.config.name as string;
    layer.name = layerName;
    const previous = chain[i - 1]?.config.name as string | undefined;
    layer.inbound_nodes =
      previous === undefined
        ? structuredClone(inboundNodes)
        : inboundNodes.map((_, call): NodeRef[] => [[previous, call, 0, {}]]);
  });
}

/** A model's distributed embedding layers (without their sizes yet) and the tables they read. */
export function embeddingsOf(model: tfl.LayersModel): {
  layers: ModelEmbedding[];
  requests: TableRequest[];
} {
  const layers = embeddingFeeds(model).map(({ layer }) => {
    const shapes = layer.inboundNodes.map((node) => node.inputTensors[0]?.shape ?? []);
    const last = shapes[0]?.[1];
    const fixed = shapes.every((s) => s.length === 2 && s[1] === last) && typeof last === 'number';
    return {
      layer: layer.name,
      table: layer.table,
      outputDim: layer.outputDim,
      combiner: layer.combiner,
      idsPerExample: fixed ? last : undefined,
      numBuckets: layer.numBuckets,
    };
  });
  const requests = new Map<string, TableRequest>();
  for (const l of layers) {
    const known = requests.get(l.table);
    // Hashed only where every layer reading the table hashes; the largest bucket count covers all.
    const hashed = known === undefined || known.numBuckets !== undefined ? l.numBuckets : undefined;
    requests.set(l.table, {
      name: l.table,
      dim: l.outputDim,
      numBuckets: hashed === undefined ? undefined : Math.max(hashed, known?.numBuckets ?? 0),
      layers: [...(known?.layers ?? []), l.layer],
    });
  }
  return { layers, requests: [...requests.values()] };
}

/**
 * The saved model's topology and weights with each distributed embedding layer made standard:
 * the weight specs of the tables appended after the model's own, and their bytes in that order.
 */
export function withStandardEmbeddings(
  artifacts: tf.io.ModelArtifacts,
  layers: readonly ModelEmbedding[],
  tables: readonly DenseTable[],
): { topology: unknown; weightSpecs: tf.io.WeightsManifestEntry[]; tableData: Uint8Array[] } {
  const weightSpecs = [...(artifacts.weightSpecs ?? [])];
  if (layers.length === 0) return { topology: artifacts.modelTopology, weightSpecs, tableData: [] };
  const tableOf = new Map(tables.map((t) => [t.name, t]));
  const standard = layers.map((l) => ({ ...l, inputDim: (tableOf.get(l.table) as DenseTable).inputDim }));
  const { topology, weightNames } = standardEmbeddingTopology(artifacts.modelTopology, standard);
  const tableData: Uint8Array[] = [];
  for (const l of standard) {
    const table = tableOf.get(l.table) as DenseTable;
    weightSpecs.push({
      name: weightNames.get(l.layer) as string,
      shape: [table.inputDim, table.dim],
      dtype: 'float32',
    });
    tableData.push(new Uint8Array(table.values.buffer, table.values.byteOffset, table.values.byteLength));
  }
  return { topology, weightSpecs, tableData };
}
