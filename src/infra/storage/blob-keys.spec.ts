import { describe, expect, it } from 'vitest';
import { blobKeys } from './blob-storage.js';

describe('blobKeys', () => {
  it("puts a file's versions and thumbnails in one of 256 directories per account, named by the file id's last two hex digits", () => {
    const fileId = 'file_0192f1c4a0b87c2d9e4f5a6b7c8d9e3f';
    expect(blobKeys.file('acc_1', fileId, 'upl_9')).toBe(`files/acc_1/3f/${fileId}.upl_9`);
    expect(blobKeys.thumbnail('acc_1', fileId, 'upl_9')).toBe(`thumbnails/acc_1/3f/${fileId}.upl_9.webp`);
    expect(blobKeys.file('acc_1', fileId, 'upl_9').startsWith(blobKeys.filePrefix('acc_1', fileId))).toBe(true);
    expect(blobKeys.thumbnail('acc_1', fileId, 'upl_9').startsWith(blobKeys.thumbnailPrefix('acc_1', fileId))).toBe(true);
  });

  it('takes the version id from a file key in either layout', () => {
    expect(blobKeys.versionOf(blobKeys.file('acc_1', 'file_ab', 'upl_9'))).toBe('upl_9');
    expect(blobKeys.versionOf('files/acc_1/file_1/upl_9')).toBe('upl_9');
  });
});
