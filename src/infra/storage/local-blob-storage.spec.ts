import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { blobKeys } from './blob-storage.js';
import { LocalBlobStorage } from './local-blob-storage.js';

describe('LocalBlobStorage', () => {
  let root: string;
  let storage: LocalBlobStorage;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'fss-blobs-'));
    storage = new LocalBlobStorage(root);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('lists the keys that start with a prefix ending inside a name: every version of one file, none of its neighbours', async () => {
    const [v1, v2] = [blobKeys.file('acc_1', 'file_0a', 'upl_1'), blobKeys.file('acc_1', 'file_0a', 'upl_2')];
    const neighbour = blobKeys.file('acc_1', 'file_1a', 'upl_3');
    for (const key of [v1, v2, neighbour]) await storage.writeBytes(key, Buffer.from(key));
    const listed: string[] = [];
    for await (const blob of storage.list(blobKeys.filePrefix('acc_1', 'file_0a'))) listed.push(blob.key);
    expect(listed.sort()).toEqual([v1, v2]);
  });

  it("removes a file's own directory of the layout before the shards with its last blob, and never a shard directory", async () => {
    const legacy = ['files/acc/file_1/upl_1', 'files/acc/file_1/upl_2', 'thumbnails/acc/file_1/upl_1.webp'];
    const sharded = blobKeys.file('acc', 'file_0a', 'upl_3');
    for (const key of [...legacy, sharded]) await storage.writeBytes(key, Buffer.from('x'));
    await storage.delete(legacy[0]);
    expect(existsSync(join(root, 'files/acc/file_1'))).toBe(true);
    for (const key of legacy.slice(1)) await storage.delete(key);
    expect(existsSync(join(root, 'files/acc/file_1'))).toBe(false);
    expect(existsSync(join(root, 'thumbnails/acc/file_1'))).toBe(false);
    await storage.delete(sharded);
    expect(existsSync(join(root, 'files/acc/0a'))).toBe(true);
  });

  it('reads a byte range into one buffer or a stream, and refuses a blob shorter than the range', async () => {
    await storage.writeBytes('files/acc/0a/file_0a.v1', Buffer.from('0123456789'));
    expect((await storage.readBytes('files/acc/0a/file_0a.v1', { start: 2, end: 5 })).toString()).toBe('2345');
    await expect(storage.readBytes('files/acc/0a/file_0a.v1', { start: 5, end: 12 })).rejects.toThrow(/ends before byte 12/);
    // A stream is refused at once too, before any byte could go out.
    await expect(storage.read('files/acc/0a/file_0a.v1', { start: 0, end: 10 })).rejects.toThrow(/ends before byte 10/);
    const chunks: Buffer[] = [];
    for await (const chunk of await storage.read('files/acc/0a/file_0a.v1', { start: 0, end: 9 })) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('0123456789');
  });

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
