import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { UploadHasher } from './upload-hasher.js';

describe.each([true, false])('UploadHasher, on a thread: %s', (onThread) => {
  const hasher = new UploadHasher();
  hasher.onThread = onThread;
  afterAll(() => hasher.onModuleDestroy());

  const feed = async (content: Buffer, chunkSize: number) => {
    const hash = hasher.start();
    for (let at = 0; at < content.length; at += chunkSize) await hash.update(content.subarray(at, at + chunkSize));
    return hash.digest();
  };
  const md5 = (content: Buffer) => createHash('md5').update(content).digest('hex');

  it('hashes any split of the bytes, including none', async () => {
    const content = randomBytes(3 * 1024 * 1024 + 17);
    for (const chunkSize of [1, 4096, 65536, 512 * 1024, 700_001, 4 * 1024 * 1024]) {
      const part = chunkSize === 1 ? content.subarray(0, 5000) : content;
      expect(await feed(part, chunkSize)).toBe(md5(part));
    }
    expect(await feed(Buffer.alloc(0), 1)).toBe(md5(Buffer.alloc(0)));
  });

  it('keeps concurrent uploads apart, and a cancelled one does not disturb the others', async () => {
    const contents = Array.from({ length: 6 }, (_, i) => randomBytes(1024 * 1024 * (i + 1) + i));
    const cancelled = hasher.start();
    await cancelled.update(randomBytes(3 * 1024 * 1024));
    const digests = Promise.all(contents.map((content, i) => feed(content, 60_000 + i * 1000)));
    cancelled.cancel();
    expect(await digests).toEqual(contents.map(md5));
  });

  it('copies the bytes, so the caller may reuse its buffer at once', async () => {
    const buffer = Buffer.alloc(300_000);
    const expected = createHash('md5');
    const hash = hasher.start();
    for (let round = 0; round < 20; round++) {
      buffer.fill(round);
      expected.update(buffer);
      await hash.update(buffer);
    }
    expect(await hash.digest()).toBe(expected.digest('hex'));
  });
});
