import type { OptimizerConfig } from '@edl/common';
import type { ParameterStoreSnapshot } from '../parameter-store.js';
import {
  decodeStoreCheckpoint,
  encodeStoreCheckpoint,
  type StoreCheckpointHeader,
} from '../store-checkpoint.js';

/** The first bytes of a shard's dense part (`shard-<i>-of-<N>-dense.edldense`). */
const MAGIC = 'EDLDNS01';

/**
 * A shard's dense variables with their optimizer slots as one file: the magic `EDLDNS01`, a uint32
 * little-endian header length H, H bytes of UTF-8 JSON (the store fields of an `edl-checkpoint/1`
 * header: version, optimizer, optimizerStep, variables and slots with their float offsets), then the
 * float32 little-endian payload, every variable then every slot (docs/master.md).
 */
export function encodeDensePart(snapshot: ParameterStoreSnapshot, optimizer: OptimizerConfig): Uint8Array[] {
  const { header, payload } = encodeStoreCheckpoint(snapshot, optimizer);
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const prefix = Buffer.alloc(12);
  prefix.write(MAGIC, 0, 'latin1');
  prefix.writeUInt32LE(json.length, 8);
  return [prefix, json, payload];
}

/** The snapshot a dense part holds; every length is checked, and errors name `path`. */
export function decodeDensePart(bytes: Uint8Array, path: string): ParameterStoreSnapshot {
  const fail = (why: string): never => {
    throw new Error(`Dense part ${path} is corrupt: ${why}`);
  };
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < 12 || buffer.toString('latin1', 0, 8) !== MAGIC)
    fail(`it does not begin with ${MAGIC}`);
  const length = buffer.readUInt32LE(8);
  if (12 + length > buffer.length) fail(`its header of ${length} bytes runs past its ${buffer.length} bytes`);
  let header: StoreCheckpointHeader;
  try {
    header = JSON.parse(buffer.toString('utf8', 12, 12 + length)) as StoreCheckpointHeader;
  } catch (error) {
    return fail(`its header is not JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(header?.variables) || !Array.isArray(header.slots))
    fail('its header lists no variables');
  const payload = buffer.subarray(12 + length);
  if (payload.length % 4 !== 0) fail(`its payload of ${payload.length} bytes is not whole floats`);
  return decodeStoreCheckpoint(header, payload, fail).store;
}
