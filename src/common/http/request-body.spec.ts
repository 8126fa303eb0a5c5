import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from './request-body.js';

describe('nestsDeeperThan', () => {
  it.each([
    ['{}', 1, false],
    ['{"a":[1,{"b":[]}]}', 3, true],
    ['{"a":[1,{"b":[]}]}', 4, false],
    ['[[[', 2, true],
    ['{"a":"[[[[[[[["}', 1, false],
    ['{"a":"\\"[[[[["}', 1, false],
    ['{"a\\\\":[[["x"]]]}', 3, true],
  ])('%s deeper than %i: %s', (text, max, expected) => {
    expect(nestsDeeperThan(text, max)).toBe(expected);
  });
});
