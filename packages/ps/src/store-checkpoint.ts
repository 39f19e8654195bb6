import type { OptimizerConfig, OptimizerSlots } from '@edl/common';
import type { NamedTensor } from '@edl/proto';
import type { ParameterStoreSnapshot } from './parameter-store.js';

/** Where one variable lies in a checkpoint's float32 payload (offset and length in floats). */
export interface VariableEntry {
  readonly name: string;
  readonly shape: readonly number[];
  readonly offset: number;
  readonly length: number;
}

/** Where one optimizer slot of a variable lies in a checkpoint's float32 payload. */
export interface SlotEntry {
  readonly variable: string;
  readonly slot: string;
  readonly offset: number;
  readonly length: number;
}

/**
 * The store's fields of a checkpoint header (`edl-checkpoint/1`): the version, the optimizer and
 * where each variable and slot lies in the payload. The checkpoint file puts these beside the task
 * state in one header; a parameter-server shard would write the same fields for its variables.
 */
export interface StoreCheckpointHeader {
  readonly version: number;
  readonly optimizer: OptimizerConfig;
  readonly optimizerStep: number;
  readonly variables: VariableEntry[];
  readonly slots: SlotEntry[];
}

/** Float32 data is stored little-endian; on such hosts it is copied in bulk. */
const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/**
 * The store's part of a checkpoint: its header fields and its payload, every variable then every
 * slot as float32 little-endian, in the snapshot's order.
 */
export function encodeStoreCheckpoint(
  snapshot: ParameterStoreSnapshot,
  optimizer: OptimizerConfig,
): { header: StoreCheckpointHeader; payload: Buffer } {
  const arrays: Float32Array[] = [];
  let offset = 0;
  const place = (values: Float32Array) => {
    arrays.push(values);
    const at = offset;
    offset += values.length;
    return at;
  };
  const variables = snapshot.variables.map((v) => ({
    name: v.name,
    shape: v.shape,
    offset: place(v.values),
    length: v.values.length,
  }));
  const slots: SlotEntry[] = [];
  for (const [variable, byName] of snapshot.slots) {
    for (const [slot, values] of byName)
      slots.push({ variable, slot, offset: place(values), length: values.length });
  }
  const payload = Buffer.alloc(offset * 4);
  let at = 0;
  for (const values of arrays) {
    if (littleEndian) {
      payload.set(new Uint8Array(values.buffer, values.byteOffset, values.length * 4), at * 4);
    } else {
      for (let i = 0; i < values.length; i++) payload.writeFloatLE(values[i] as number, (at + i) * 4);
    }
    at += values.length;
  }
  return {
    header: { version: snapshot.version, optimizer, optimizerStep: snapshot.optimizerStep, variables, slots },
    payload,
  };
}

/**
 * The store's snapshot and optimizer from its checkpoint fields and a payload whose length is a
 * multiple of 4 and whose checksum the caller verified. An entry outside the payload is reported
 * through `fail`, which names the file and throws.
 */
export function decodeStoreCheckpoint(
  header: StoreCheckpointHeader,
  payload: Buffer,
  fail: (message: string) => never,
): { store: ParameterStoreSnapshot; optimizer: OptimizerConfig } {
  const floats = payload.length / 4;
  const take = (offset: number, length: number, what: string): Float32Array => {
    if (offset < 0 || length < 0 || offset + length > floats) fail(`${what} lies outside the payload`);
    const values = new Float32Array(length);
    if (littleEndian) {
      new Uint8Array(values.buffer).set(payload.subarray(offset * 4, (offset + length) * 4));
    } else {
      for (let i = 0; i < length; i++) values[i] = payload.readFloatLE((offset + i) * 4);
    }
    return values;
  };
  const variables: NamedTensor[] = header.variables.map((v) => ({
    name: v.name,
    shape: v.shape,
    values: take(v.offset, v.length, `variable '${v.name}'`),
  }));
  const slots: OptimizerSlots = new Map();
  for (const s of header.slots) {
    let byName = slots.get(s.variable);
    if (byName === undefined) {
      byName = new Map();
      slots.set(s.variable, byName);
    }
    byName.set(s.slot, take(s.offset, s.length, `slot '${s.slot}' of '${s.variable}'`));
  }
  return {
    store: { version: header.version, variables, optimizerStep: header.optimizerStep, slots },
    optimizer: header.optimizer,
  };
}
