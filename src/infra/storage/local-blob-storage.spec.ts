import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalBlobStorage } from './local-blob-storage.js';

describe('LocalBlobStorage', () => {
  let root: string;
  let storage: LocalBlobStorage;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'fss-blobs-'));
    storage = new LocalBlobStorage(root);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('rejects reading a missing blob at once, rather than with a stream error nobody listens to', async () => {
    await expect(storage.read('files/acc/file/missing')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('keeps serving bytes it opened even if the blob is deleted meanwhile', async () => {
    await storage.write('files/acc/file/v1', Readable.from([Buffer.from('still here')]));
    const stream = await storage.read('files/acc/file/v1');
    await storage.delete('files/acc/file/v1');
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('still here');
  });

  it('reads a byte range and refuses keys that could leave the storage root', async () => {
    await storage.write('files/acc/file/v2', Readable.from([Buffer.from('0123456789')]));
    const chunks: Buffer[] = [];
    for await (const chunk of await storage.read('files/acc/file/v2', { start: 2, end: 5 })) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('2345');
    for (const key of ['../etc/passwd', '/etc/passwd', 'files/../../x', 'files/a\u0000b', '']) {
      await expect(storage.read(key), key).rejects.toThrow(/Unsafe blob key|escapes/);
    }
  });
});
