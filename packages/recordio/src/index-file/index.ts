export { buildLocalSidecarIndex, headerCheck } from './local-sidecar.js';
export {
  BLOCK_HEADER_BYTES,
  decodeSidecarIndex,
  encodeSidecarIndex,
  type IndexedBlock,
  recordioSidecarIndex,
  type SidecarIndex,
  sidecarCheck,
  tfrecordRecordsPerBlock,
  tfrecordSidecarIndex,
} from './sidecar-index.js';
