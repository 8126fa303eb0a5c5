import { describe, expect, it } from 'vitest';
import { contentDisposition, parseRange } from './blob-response.js';

describe('parseRange', () => {
  it.each([
    ['bytes=0-9', 100, { start: 0, end: 9 }],
    ['bytes=10-', 100, { start: 10, end: 99 }],
    ['bytes=-10', 100, { start: 90, end: 99 }],
    ['bytes=-1000', 100, { start: 0, end: 99 }],
    ['bytes=90-1000', 100, { start: 90, end: 99 }],
    ['bytes=99-99', 100, { start: 99, end: 99 }],
    [' bytes=1-2 ', 100, { start: 1, end: 2 }],
    ['Bytes=0-9', 100, { start: 0, end: 9 }],
    ['BYTES=-10', 100, { start: 90, end: 99 }],
  ])('%s of %i bytes is %o', (header, size, expected) => {
    expect(parseRange(header, size)).toEqual(expected);
  });

  it.each([
    ['bytes=100-', 100],
    ['bytes=100-200', 100],
    ['bytes=5-4', 100],
    ['bytes=-0', 100],
    ['bytes=0-', 0],
  ])('%s of %i bytes is unsatisfiable', (header, size) => {
    expect(parseRange(header, size)).toBe('unsatisfiable');
  });

  it('sends an empty file whole for a suffix range, the one range it satisfies', () => {
    expect(parseRange('bytes=-5', 0)).toBeNull();
  });

  it.each([['bytes=0-1,5-6'], ['items=0-1'], ['bytes=a-b'], ['bytes=-'], ['']])('ignores %j (whole file)', (header) => {
    expect(parseRange(header, 100)).toBeNull();
  });
});

describe('contentDisposition', () => {
  it('gives an ASCII fallback and the exact UTF-8 name', () => {
    expect(contentDisposition('attachment', 'report.pdf')).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    expect(contentDisposition('inline', 'Ünïcode "quoted" (1).txt')).toBe(
      `inline; filename="_n_code _quoted_ (1).txt"; filename*=UTF-8''%C3%9Cn%C3%AFcode%20%22quoted%22%20%281%29.txt`,
    );
  });
});
