import { TableColumnOptions } from 'typeorm';

/** Column builders shared by migrations, so one migration creates the same schema on SQLite and PostgreSQL. */
export const id = (name = 'id'): TableColumnOptions => ({ name, type: 'varchar', length: '40', isPrimary: name === 'id' });
export const ref = (name: string, nullable = false): TableColumnOptions => ({ name, type: 'varchar', length: '40', isNullable: nullable });
export const text = (name: string, length: number, nullable = false): TableColumnOptions => ({ name, type: 'varchar', length: String(length), isNullable: nullable });
export const longText = (name: string, nullable = false): TableColumnOptions => ({ name, type: 'text', isNullable: nullable });
export const timestamp = (name: string, nullable = false): TableColumnOptions => ({ name, type: 'varchar', length: '24', isNullable: nullable });
export const bigint = (name: string, options: { nullable?: boolean; default?: number } = {}): TableColumnOptions => ({
  name,
  type: 'bigint',
  isNullable: options.nullable ?? false,
  default: options.default,
});
export const integer = (name: string, options: { nullable?: boolean; default?: number } = {}): TableColumnOptions => ({
  name,
  type: 'integer',
  isNullable: options.nullable ?? false,
  default: options.default,
});
export const boolean = (name: string, defaultValue: boolean): TableColumnOptions => ({ name, type: 'boolean', default: defaultValue ? 'true' : 'false' });
