import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ResumableMd5 } from './resumable-md5.js';

describe('ResumableMd5', () => {
  it('gives the MD5 of all bytes however often it is saved and resumed, hashers reused or not', async () => {
    const content = randomBytes(3 * 1024 * 1024 + 77);
    let saved: { state: string | null; offset: number } = { state: null, offset: 0 };
    for (const cut of [0, 1, 63, 64, 65, 100_000, 2 * 1024 * 1024, content.length]) {
      const md5 = await ResumableMd5.resume(saved.state, saved.offset);
      md5.update(content.subarray(md5.offset, cut));
      saved = { state: md5.offset > 0 ? md5.save() : null, offset: md5.offset };
      md5.release();
    }
    const last = await ResumableMd5.resume(saved.state, saved.offset);
    expect(last.offset).toBe(content.length);
    expect(last.digest()).toBe(createHash('md5').update(content).digest('hex'));
    last.release();
    const empty = await ResumableMd5.resume(null, 0);
    expect(empty.digest()).toBe(createHash('md5').digest('hex'));
  });
});
