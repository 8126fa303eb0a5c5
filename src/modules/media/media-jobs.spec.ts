import { describe, expect, it } from 'vitest';
import { mediaJobId, mediaJobOptions, thumbnailKind } from './media-jobs.js';

describe('thumbnailKind', () => {
  it.each([
    ['image/jpeg', 'image'],
    ['image/heic', 'image'],
    ['IMAGE/PNG', 'image'],
    ['video/mp4', 'video'],
    ['video/quicktime', 'video'],
    ['application/pdf', 'pdf'],
    ['application/pdf; charset=binary', 'pdf'],
    ['text/plain', null],
    ['audio/mpeg', null],
    ['application/zip', null],
    ['application/octet-stream', null],
  ])('%s -> %s', (mime, kind) => expect(thumbnailKind(mime)).toBe(kind));
});

describe('mediaJobId', () => {
  const blob = 'files/acc_1/file_1/upl_1';

  it('is the same for the same stored version, so a repeat is a no-op', () => {
    expect(mediaJobId('scan', 'file_1', blob)).toBe(mediaJobId('scan', 'file_1', blob));
  });

  it('differs per version and per kind of work', () => {
    expect(mediaJobId('scan', 'file_1', blob)).not.toBe(mediaJobId('scan', 'file_1', 'files/acc_1/file_1/upl_2'));
    expect(mediaJobId('scan', 'file_1', blob)).not.toBe(mediaJobId('thumbnail', 'file_1', blob));
  });

  it('holds no ":" (BullMQ reserves it) and no "/"', () => {
    expect(mediaJobId('thumbnail', 'file_1', blob)).toMatch(/^[A-Za-z0-9_-]+$/);
  });
});

describe('job options', () => {
  it('retries with exponential backoff, scans longer than thumbnails', () => {
    expect(mediaJobOptions('thumbnail', 'x', 5000)).toMatchObject({ jobId: 'x', attempts: 5, backoff: { type: 'exponential', delay: 5000 } });
    expect(mediaJobOptions('scan', 'y', 5000).attempts).toBeGreaterThan(5);
  });
});
