import { describe, expect, it } from 'vitest';
import { ApiError } from '../../common/errors/api-error.js';
import { resumableUploadTarget } from './upload-metadata.js';

const refusal = (metadata: Record<string, string | null> | undefined) => {
  try {
    resumableUploadTarget(metadata);
  } catch (error) {
    return error instanceof ApiError ? { status: error.status, details: error.details } : error;
  }
  throw new Error('accepted');
};

describe('resumableUploadTarget', () => {
  it('takes filename, lets name override it, and reads folder_id and overwrite', () => {
    expect(resumableUploadTarget({ filename: 'a.txt' })).toEqual({ name: 'a.txt', folderId: null, overwrite: false });
    expect(resumableUploadTarget({ filename: 'a.txt', name: 'b.txt', folder_id: 'fld_1', overwrite: 'true', filetype: 'text/plain' })).toEqual({
      name: 'b.txt',
      folderId: 'fld_1',
      overwrite: true,
    });
  });

  it('reads an empty folder_id or overwrite as not given, as the multipart upload reads empty form fields', () => {
    expect(resumableUploadTarget({ filename: 'a.txt', folder_id: '', overwrite: '' })).toEqual({ name: 'a.txt', folderId: null, overwrite: false });
    expect(resumableUploadTarget({ filename: 'a.txt', folder_id: null, overwrite: null })).toEqual({ name: 'a.txt', folderId: null, overwrite: false });
  });

  it('refuses a missing filename, a bad name and a bad overwrite with the field named', () => {
    expect(refusal(undefined)).toMatchObject({ status: 400, details: { fields: [{ field: 'filename' }] } });
    expect(refusal({ filename: null })).toMatchObject({ status: 400, details: { fields: [{ field: 'filename' }] } });
    expect(refusal({ filename: 'a/b' })).toMatchObject({ status: 400, details: { fields: [{ field: 'filename' }] } });
    expect(refusal({ filename: 'a', name: '..' })).toMatchObject({ status: 400, details: { fields: [{ field: 'name' }] } });
    const notWellFormed = { field: 'filename', message: expect.stringMatching(/well-formed Unicode/) };
    expect(refusal({ filename: '\ud800.txt' })).toMatchObject({ status: 400, details: { fields: [notWellFormed] } });
    expect(refusal({ filename: 'a', name: 'b\udc00' })).toMatchObject({ status: 400, details: { fields: [{ ...notWellFormed, field: 'name' }] } });
    expect(refusal({ filename: 'a', overwrite: 'yes' })).toMatchObject({ status: 400, details: { fields: [{ field: 'overwrite' }] } });
  });
});
