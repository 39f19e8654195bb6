import { RecordIOReader } from '@edl/recordio';

/** Every record of a RecordIO file, copied out of the reader's buffers. */
export async function readAll(file: string): Promise<Uint8Array[]> {
  const reader = await RecordIOReader.open(file);
  try {
    const out: Uint8Array[] = [];
    for await (const record of reader.records()) out.push(Uint8Array.from(record));
    return out;
  } finally {
    reader.close();
  }
}
