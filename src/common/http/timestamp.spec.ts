import { describe, expect, it } from 'vitest';
import { parseTimestamp } from './timestamp.js';

describe('parseTimestamp', () => {
  it.each([
    ['2026-11-21T10:00:00.000Z', '2026-11-21T10:00:00.000Z'],
    ['2026-11-21T10:00:00Z', '2026-11-21T10:00:00.000Z'],
    ['2026-11-21t10:00:00z', '2026-11-21T10:00:00.000Z'],
    ['2026-11-21T11:30:00+01:30', '2026-11-21T10:00:00.000Z'],
    ['2026-11-21T05:00:00-05:00', '2026-11-21T10:00:00.000Z'],
    ['2026-11-21T10:00:00-00:00', '2026-11-21T10:00:00.000Z'],
    ['2026-11-21T10:00:00.5Z', '2026-11-21T10:00:00.500Z'],
    ['2026-11-21T10:00:00.123000Z', '2026-11-21T10:00:00.123Z'],
    // Finer than a millisecond rounds up, so a window bound keeps its meaning for times stored in milliseconds.
    ['2026-11-21T10:00:00.123000001Z', '2026-11-21T10:00:00.124Z'],
    ['2026-11-21T23:59:59.9999Z', '2026-11-22T00:00:00.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['0099-01-01T00:00:00Z', '0099-01-01T00:00:00.000Z'],
  ])('reads %s as %s', (text, instant) => {
    expect(parseTimestamp(text)?.toISOString()).toBe(instant);
  });

  it.each([
    ['a week date', '2026-W01'],
    ['a week date with its day', '2026-W01-1T10:00:00Z'],
    ['an ordinal date', '2026-001'],
    ['an ordinal date and time', '2026-325T10:00:00Z'],
    ['a date alone', '2026-11-21'],
    ['a time without a zone', '2026-11-21T10:00:00'],
    ['the basic format', '20261121T100000Z'],
    ['a space for T', '2026-11-21 10:00:00Z'],
    ['hours and minutes only', '2026-11-21T10:00Z'],
    ['an offset without a colon', '2026-11-21T10:00:00+0100'],
    ['an hour-only offset', '2026-11-21T10:00:00+01'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['month 0', '2026-00-01T00:00:00Z'],
    ['30 February', '2026-02-30T00:00:00Z'],
    ['29 February of a common year', '2026-02-29T00:00:00Z'],
    ['29 February 1900', '1900-02-29T00:00:00Z'],
    ['31 April', '2026-04-31T00:00:00Z'],
    ['day 0', '2026-11-00T00:00:00Z'],
    ['hour 24', '2026-11-21T24:00:00Z'],
    ['minute 60', '2026-11-21T10:60:00Z'],
    ['a leap second', '2026-12-31T23:59:60Z'],
    ['offset +24:00', '2026-11-21T10:00:00+24:00'],
    ['offset minutes 60', '2026-11-21T10:00:00+01:60'],
    ['ten fraction digits', '2026-11-21T10:00:00.1234567890Z'],
    ['an empty fraction', '2026-11-21T10:00:00.Z'],
    ['a comma fraction', '2026-11-21T10:00:00,5Z'],
    ['an expanded year', '+02026-11-21T10:00:00Z'],
    ['surrounding spaces', ' 2026-11-21T10:00:00Z '],
    ['a Unix time', '1763719200'],
    ['words', 'yesterday'],
  ])('refuses %s (%s)', (_what, text) => {
    expect(parseTimestamp(text)).toBeNull();
  });
});
