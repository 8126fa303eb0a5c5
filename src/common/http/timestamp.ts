import { registerDecorator, type ValidationOptions } from 'class-validator';

/** The one form every timestamp parameter takes, as error messages and the documentation name it. */
export const TIMESTAMP_FORMAT = 'an RFC 3339 date-time with a time zone, such as 2026-11-21T10:00:00.000Z or 2026-11-21T11:00:00+01:00';

// RFC 3339 section 5.6 `date-time`. Its ABNF letters are case-insensitive, hence t/T and z/Z.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * The instant a timestamp parameter names, or null when it is not an RFC 3339 date-time: ISO 8601's other forms
 * (week dates, ordinal dates, the basic format, a date alone, a time without a zone) and values out of range
 * (month 13, 30 February, hour 24, second 60, offset +24:00) are refused, never guessed at.
 * A fraction finer than a millisecond rounds up to the next millisecond: the service keeps every time in whole
 * milliseconds, so `t >= since` and `t < until` then select exactly the times the precise value would.
 */
export function parseTimestamp(text: string): Date | null {
  const match = DATE_TIME.exec(text);
  if (!match) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1];
  if (month < 1 || month > 12 || day < 1 || day > days || hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (match[8]) {
    const [offsetHours, offsetMins] = [Number(match[9]), Number(match[10])];
    if (offsetHours > 23 || offsetMins > 59) return null;
    offsetMinutes = (match[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const nanoseconds = Number((match[7] ?? '').padEnd(9, '0'));
  const instant = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC takes years 0 to 99 as 1900 to 1999.
  instant.setUTCFullYear(year, month - 1, day);
  instant.setUTCHours(hour, minute, second, 0);
  return new Date(instant.getTime() + Math.ceil(nanoseconds / 1e6) - offsetMinutes * 60_000);
}

/** Validates a timestamp parameter (parseTimestamp), refusing anything else with a message naming the form. */
export function IsTimestamp(options: ValidationOptions = {}): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isTimestamp',
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message: `must be ${TIMESTAMP_FORMAT}`, ...options },
      validator: { validate: (value: unknown) => typeof value === 'string' && parseTimestamp(value) !== null },
    });
}
