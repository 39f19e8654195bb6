import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { StorageError } from '../storage-error.js';
import { SinkBase } from './sink-base.js';

/**
 * A local file written as checkpoints always were: into a temporary file beside it (a hidden name,
 * which listings skip), then fsync, rename over the final name, and fsync of the directory, so a
 * crash leaves the old file or the new one.
 */
export class LocalFileSink extends SinkBase {
  private constructor(
    path: string,
    private readonly tempPath: string,
    private readonly file: FileHandle,
  ) {
    super(path);
  }

  /** Creates the parent directories and the temporary file of `path` (absolute). */
  static async open(path: string): Promise<LocalFileSink> {
    const tempPath = join(
      dirname(path),
      `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
    );
    try {
      await mkdir(dirname(path), { recursive: true });
      return new LocalFileSink(path, tempPath, await open(tempPath, 'wx'));
    } catch (error) {
      throw ioError(path, 'cannot create', error);
    }
  }

  protected async writeChunk(chunk: Uint8Array): Promise<void> {
    try {
      for (let done = 0; done < chunk.byteLength; ) {
        done += (await this.file.write(chunk, done, chunk.byteLength - done)).bytesWritten;
      }
    } catch (error) {
      throw ioError(this.location, 'cannot write', error);
    }
  }

  protected async commit(): Promise<void> {
    try {
      await this.file.sync();
      await this.file.close();
      await rename(this.tempPath, this.location);
      await syncDirectory(dirname(this.location));
    } catch (error) {
      throw ioError(this.location, 'cannot commit', error);
    }
  }

  protected async discard(): Promise<void> {
    await this.file.close().catch(() => undefined);
    await rm(this.tempPath, { force: true });
  }
}

/** Removes a local file; a missing one is no error. */
export async function removeLocalFile(path: string): Promise<void> {
  try {
    await rm(path, { force: true });
  } catch (error) {
    throw ioError(path, 'cannot delete', error);
  }
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function ioError(path: string, action: string, cause: unknown): StorageError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new StorageError('IO', path, `${action}: ${reason}`, cause);
}
