import { ValueTransformer } from 'typeorm';

/**
 * Byte counts exceed 2^31, so they live in BIGINT columns; PostgreSQL hands those back as strings.
 * Sizes stay far below 2^53, so a JS number is exact.
 */
export const bigintAsNumber: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | number | null) => (value === null || value === undefined ? value : Number(value)),
};

/**
 * Timestamps are stored as ISO 8601 UTC strings with milliseconds (`2026-11-21T10:00:00.000Z`):
 * the same bytes on SQLite and PostgreSQL, sortable and comparable as text, and exactly the
 * format the API returns.
 */
export const isoTimestamp: ValueTransformer = {
  to: (value: Date | null | undefined) => (value instanceof Date ? value.toISOString() : value),
  from: (value: string | null) => (value === null || value === undefined ? value : new Date(value)),
};

export const TIMESTAMP_COLUMN = { type: 'varchar', length: 24, transformer: isoTimestamp } as const;
export const BIGINT_COLUMN = { type: 'bigint', transformer: bigintAsNumber } as const;
