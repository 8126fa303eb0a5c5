import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { UploadHasher } from '../files/upload/hashing/upload-hasher.js';
import { type PatchMd5, ResumableMd5, ThreadPatchMd5 } from './resumable-md5.js';

describe('ResumableMd5', () => {
  const hasher = new UploadHasher();
  hasher.onThread = true;
  afterAll(() => hasher.onModuleDestroy());
  const md5Of = (content: Buffer) => createHash('md5').update(content).digest('hex');
  const cuts = (length: number) => [0, 1, 63, 64, 65, 100_000, 2 * 1024 * 1024, 2 * 1024 * 1024 + 5, length];

  /** One PATCH of `bytes`, fed in pieces as a socket would, then saved. */
  const patch = async (md5: PatchMd5, bytes: Buffer) => {
    for (let at = 0; at < bytes.length; at += 65_536) await md5.update(bytes.subarray(at, at + 65_536));
    const saved = { state: await md5.save(), offset: md5.offset };
    md5.release();
    return saved;
  };

  it('gives the MD5 of all bytes however often it is saved and resumed, hashers reused or not', async () => {
    const content = randomBytes(3 * 1024 * 1024 + 77);
    let saved: { state: string | null; offset: number } = { state: null, offset: 0 };
    for (const cut of cuts(content.length)) {
      const md5 = await ResumableMd5.resume(saved.state, saved.offset);
      saved = await patch(md5, content.subarray(md5.offset, cut));
    }
    const last = await ResumableMd5.resume(saved.state, saved.offset);
    expect(last.offset).toBe(content.length);
    expect(last.digest()).toBe(md5Of(content));
    last.release();
    const empty = await ResumableMd5.resume(null, 0);
    expect(empty.digest()).toBe(md5Of(Buffer.alloc(0)));
  });

  it('goes on from the same saved state on the hashing thread, PATCHes alternating between the thread and the event loop', async () => {
    const content = randomBytes(3 * 1024 * 1024 + 77);
    let saved: { state: string | null; offset: number } = { state: null, offset: 0 };
    for (const [index, cut] of cuts(content.length).entries()) {
      const inline = await ResumableMd5.resume(saved.state, saved.offset);
      const md5 = index % 2 === 0 ? new ThreadPatchMd5(hasher.resume(inline.state()), inline.offset) : inline;
      if (md5 !== inline) inline.release();
      saved = await patch(md5, content.subarray(md5.offset, cut));
    }
    const last = await ResumableMd5.resume(saved.state, saved.offset);
    expect(last.offset).toBe(content.length);
    expect(last.digest()).toBe(md5Of(content));
    last.release();
  });

  it('keeps PATCHes of several uploads on the thread apart, and one given up disturbs none', async () => {
    const contents = Array.from({ length: 4 }, (_, i) => randomBytes(1024 * 1024 + i * 1000));
    const dropped = new ThreadPatchMd5(hasher.resume(null), 0);
    await dropped.update(randomBytes(2 * 1024 * 1024));
    const halves = await Promise.all(contents.map((content) => patch(new ThreadPatchMd5(hasher.resume(null), 0), content.subarray(0, 500_000))));
    dropped.release();
    const wholes = await Promise.all(contents.map((content, i) => patch(new ThreadPatchMd5(hasher.resume(halves[i].state), 500_000), content.subarray(500_000))));
    for (const [i, saved] of wholes.entries()) {
      const md5 = await ResumableMd5.resume(saved.state, saved.offset);
      expect(md5.digest()).toBe(md5Of(contents[i]));
      md5.release();
    }
  });

  it('fails a PATCH on the thread whose saved state cannot be loaded, and the thread goes on with the others', async () => {
    const broken = new ThreadPatchMd5(hasher.resume(Buffer.from('not a state').toString('base64')), 10);
    await broken.update(Buffer.alloc(10));
    await expect(broken.save()).rejects.toThrow(/dropped an upload's MD5/);
    broken.release();
    const content = randomBytes(700_000);
    const saved = await patch(new ThreadPatchMd5(hasher.resume(null), 0), content);
    const md5 = await ResumableMd5.resume(saved.state, saved.offset);
    expect(md5.digest()).toBe(md5Of(content));
    md5.release();
  });
});
