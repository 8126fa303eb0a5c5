/**
 * A FROM item `v` that turns one JSON array parameter into rows, so a batch of any size is one
 * statement with one parameter: json_each on SQLite, jsonb_to_recordset on PostgreSQL. Only for
 * statements whose single parameter is that array.
 */
export function jsonRows(isSqlite: boolean, columns: Record<string, 'varchar' | 'integer' | 'text'>): string {
  const names = Object.keys(columns);
  if (isSqlite) return `(SELECT ${names.map((name) => `value->>'${name}' AS ${name}`).join(', ')} FROM json_each(?)) AS v`;
  return `jsonb_to_recordset($1::jsonb) AS v(${names.map((name) => `${name} ${columns[name]}`).join(', ')})`;
}
