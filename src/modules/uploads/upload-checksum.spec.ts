import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../common/errors/api-error.js';
import { ChecksumMismatch, parseUploadChecksum, verifiedChunk } from './upload-checksum.js';

const digest = (algorithm: string, bytes: Buffer) => createHash(algorithm).update(bytes).digest('base64');

describe('Upload-Checksum', () => {
  it('reads md5 and sha1 digests, and nothing when the header is absent', () => {
    const bytes = Buffer.from('chunk');
    expect(parseUploadChecksum(`sha1 ${digest('sha1', bytes)}`)).toEqual({ algorithm: 'sha1', expected: createHash('sha1').update(bytes).digest() });
    expect(parseUploadChecksum(`md5 ${digest('md5', bytes)}`)?.algorithm).toBe('md5');
    expect(parseUploadChecksum(undefined)).toBeUndefined();
  });

  it.each([
    ['an unknown algorithm', `crc32 ${Buffer.alloc(4).toString('base64')}`],
    ['a missing digest', 'sha1'],
    ['a digest of the wrong length', `sha1 ${Buffer.alloc(16).toString('base64')}`],
    ['a digest that is not base64', 'md5 not*base64*at*all*'],
    ['extra parts', `md5 ${digest('md5', Buffer.alloc(1))} more`],
  ])('refuses %s with 400 invalid_request naming the header', (_case, header) => {
    const refusal = (() => {
      try {
        parseUploadChecksum(header);
      } catch (error) {
        return error;
      }
    })();
    expect(refusal).toBeInstanceOf(ApiError);
    expect(refusal).toMatchObject({ status: 400, code: 'invalid_request', details: { fields: [{ field: 'Upload-Checksum' }] } });
  });

  it('passes on a matching chunk unchanged, and refuses a different one with 460', async () => {
    const bytes = Buffer.from('the bytes of one chunk');
    const checksum = parseUploadChecksum(`sha1 ${digest('sha1', bytes)}`)!;
    const chunk = await verifiedChunk(Readable.from([bytes.subarray(0, 5), bytes.subarray(5)]), checksum);
    const read: Buffer[] = [];
    for await (const part of chunk.bytes) read.push(part as Buffer);
    await chunk.discard();
    expect(Buffer.concat(read)).toEqual(bytes);
    await expect(verifiedChunk(Readable.from([Buffer.from('other bytes')]), checksum)).rejects.toBeInstanceOf(ChecksumMismatch);
    await expect(verifiedChunk(Readable.from([Buffer.from('other bytes')]), checksum)).rejects.toMatchObject({ status: 460 });
  });
});
