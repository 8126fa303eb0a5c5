import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { eventually } from './time.js';

/**
 * PostgreSQL only: holds one row `FOR UPDATE` while `queue` starts requests, each once the one before waits for
 * the row, then lets them go in that order. So a test can make requests interleave as two clients rarely but
 * really do (the second read the row before the first committed, and writes it after). Answers the responses.
 */
export async function queueBehindRowLock<T>(
  app: INestApplicationContext,
  table: string,
  id: string,
  requests: (() => Promise<T>)[],
  /** Done once every request waits, before the row is let go: what happens to the world while they wait. */
  whileHeld: () => Promise<unknown> = async () => undefined,
): Promise<T[]> {
  const db = app.get(DataSource);
  const waiting = async () =>
    (await db.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"))[0].n as number;
  const holder = db.createQueryRunner();
  await holder.startTransaction();
  const started: Promise<T>[] = [];
  try {
    await holder.query(`SELECT id FROM ${table} WHERE id = $1 FOR UPDATE`, [id]);
    for (const [n, request] of requests.entries()) {
      started.push(request());
      await eventually(async () => (await waiting()) > n, 10_000, `request ${n + 1} to wait for the ${table} row`);
    }
    await whileHeld();
  } finally {
    await holder.rollbackTransaction();
    await holder.release();
  }
  return Promise.all(started);
}
