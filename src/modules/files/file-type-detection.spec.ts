import { describe, expect, it } from 'vitest';
import { categoryOf, detectMimeType } from './file-type-detection.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');
const PDF = Buffer.from('%PDF-1.7\n%âãÏÓ\n1 0 obj\n', 'latin1');
const GZIP = Buffer.from('1f8b0800000000000003', 'hex');

describe('type detection', () => {
  it('trusts the content over the name', async () => {
    expect(await detectMimeType(PNG, 'holiday.txt')).toBe('image/png');
    expect(await detectMimeType(PDF, 'no-extension')).toBe('application/pdf');
    expect(await detectMimeType(GZIP, 'x.bin')).toBe('application/gzip');
  });

  it('falls back to the extension, then to application/octet-stream', async () => {
    expect(await detectMimeType(Buffer.from('hello'), 'notes.TXT')).toBe('text/plain');
    expect(await detectMimeType(Buffer.from('a,b\n1,2'), 'data.csv')).toBe('text/csv');
    expect(await detectMimeType(Buffer.alloc(0), 'empty.md')).toBe('text/markdown');
    expect(await detectMimeType(Buffer.from([1, 2, 3]), 'blob')).toBe('application/octet-stream');
  });
});

describe('category', () => {
  it.each([
    ['image/png', 'image'],
    ['image/svg+xml', 'image'],
    ['video/mp4', 'video'],
    ['audio/mpeg', 'audio'],
    ['application/pdf', 'document'],
    ['text/plain; charset=utf-8', 'document'],
    ['application/rtf', 'document'],
    ['application/msword', 'document'],
    ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'document'],
    ['application/vnd.oasis.opendocument.spreadsheet', 'document'],
    ['application/zip', 'archive'],
    ['application/x-tar', 'archive'],
    ['application/gzip', 'archive'],
    ['application/x-bzip2', 'archive'],
    ['application/x-xz', 'archive'],
    ['application/x-7z-compressed', 'archive'],
    ['application/vnd.rar', 'archive'],
    ['application/json', 'other'],
    ['application/octet-stream', 'other'],
  ])('%s is %s', (mime, category) => {
    expect(categoryOf(mime)).toBe(category);
  });
});
