// Compiled (never run) by types.test.ts: the public typings accept what the docs show and reject
// misuse. Each @ts-expect-error must be an error, or tsc fails.
import {
  type ChunkInfo,
  type CompressorName,
  type RecordBatch,
  RecordIOError,
  type RecordIOErrorCode,
  RecordIOReader,
  RecordIOWriter,
  type SkipStats,
} from '../../src/index.js';

export async function usage(): Promise<void> {
  const writer: RecordIOWriter = await RecordIOWriter.create('x.rio', {
    compressor: 'gzip',
    maxChunkBytes: 1 << 20,
  });
  writer.write('text');
  writer.write(new Uint8Array(1));
  writer.writeBatch(['a', new Uint8Array(0)]);
  writer.writeBatch({ data: new Uint8Array(4), bounds: Uint32Array.of(0, 4) });
  const written: number = writer.stats.bytesWritten;
  writer.close();
  // @ts-expect-error: compressors are a closed set
  await RecordIOWriter.create('x.rio', { compressor: 'lz4' });
  // @ts-expect-error: records are bytes or strings
  writer.write(42);

  const reader: RecordIOReader = await RecordIOReader.open('x.rio', { onCorruptChunk: 'skip' });
  const chunk: ChunkInfo | undefined = reader.chunks[0];
  const compressor: CompressorName | number | undefined = chunk?.compressor;
  const batch: RecordBatch = await reader.read(0, reader.numRecords);
  const first: Uint8Array = batch.get(0);
  const bounds: Uint32Array = batch.bounds;
  for (const record of batch) record satisfies Uint8Array;
  for await (const record of reader.records(1)) record satisfies Uint8Array;
  for await (const b of reader.batches()) b satisfies RecordBatch;
  const skipped: SkipStats = reader.skipped;
  // @ts-expect-error: onCorruptChunk is 'error' | 'skip'
  await RecordIOReader.open('x.rio', { onCorruptChunk: 'ignore' });
  // @ts-expect-error: chunks are read-only
  reader.chunks.push(chunk!);
  reader.close();

  try {
    await reader.read(0, 1);
  } catch (error) {
    if (error instanceof RecordIOError) {
      const code: RecordIOErrorCode = error.code;
      const where: [string | undefined, number | undefined, number | undefined] = [
        error.path,
        error.chunk,
        error.offset,
      ];
      void [code, where];
    }
  }
  void [written, compressor, first, bounds, skipped];
}
