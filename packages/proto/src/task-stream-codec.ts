/*
 * Hand-written protobuf wire codec of the dispatch fast path (TaskStream and TaskBatchStream
 * messages), 3-5x cheaper than the reflective toBinary / fromBinary of protobuf-es, which cost more
 * than the master's dispatch decision itself. It reads and writes exactly the shapes of the generated
 * types (src/generated is still the schema). The decoder takes the fast path for the fields it
 * knows; any other input (an unknown field, an unexpected wire type, a repeated sub-message) is
 * handed to the generated `fromBinary`, so every valid encoding decodes as protobuf-es would.
 * test/task-stream-codec.test.ts checks both directions against the generated code.
 *
 * The two directions share nothing but the schema: encoding is in task-stream-encoder.ts, decoding
 * in task-stream-decoder.ts, and a schema change to these messages updates both. Each direction
 * stays in one file because it is a hot path whose cursor is module state (a buffer and a position)
 * that its helpers read and write directly, without an object to pass around.
 */

export {
  decodeTaskBatchStreamRequest,
  decodeTaskBatchStreamResponse,
  decodeTaskStreamRequest,
  decodeTaskStreamResponse,
} from './task-stream-decoder.js';
export {
  encodeTaskBatchStreamRequest,
  encodeTaskBatchStreamResponse,
  encodeTaskStreamRequest,
  encodeTaskStreamResponse,
} from './task-stream-encoder.js';
