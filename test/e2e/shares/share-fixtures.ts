import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxEventEntity } from '../../../src/infra/outbox/outbox-event.entity.js';
import type { TestAccount } from '../../support/accounts.js';
import type { TestApp } from '../../support/test-app.js';

/**
 * What the files module does to a file's links, done straight in the database so these tests do
 * not depend on its routes: trashing sets files.state and marks every link invalidated in one
 * transaction; permanent deletion removes the row (and marks the links); restoring brings the file
 * back to active and leaves the links' invalidated_at alone.
 */
export const fileLifecycle = {
  async moveToTrash(app: INestApplicationContext, fileId: string): Promise<void> {
    const now = new Date().toISOString();
    await app.get(DataSource).transaction(async (tx) => {
      await tx.query(`UPDATE files SET state = 'trashed', deleted_at = ${p(tx, 1)} WHERE id = ${p(tx, 2)}`, [now, fileId]);
      await tx.query(`UPDATE shares SET invalidated_at = ${p(tx, 1)} WHERE file_id = ${p(tx, 2)} AND invalidated_at IS NULL`, [now, fileId]);
    });
  },
  async restore(app: INestApplicationContext, fileId: string): Promise<void> {
    await app.get(DataSource).query(`UPDATE files SET state = 'active', deleted_at = NULL WHERE id = ${p(app.get(DataSource).manager, 1)}`, [fileId]);
  },
  async deletePermanently(app: INestApplicationContext, fileId: string, options: { markLinks: boolean } = { markLinks: true }): Promise<void> {
    const now = new Date().toISOString();
    await app.get(DataSource).transaction(async (tx) => {
      if (options.markLinks) await tx.query(`UPDATE shares SET invalidated_at = ${p(tx, 1)} WHERE file_id = ${p(tx, 2)} AND invalidated_at IS NULL`, [now, fileId]);
      await tx.query(`DELETE FROM files WHERE id = ${p(tx, 1)}`, [fileId]);
    });
  },
  /** A file that left the active state by some other path, with its links not (yet) marked. */
  async setState(app: INestApplicationContext, fileId: string, state: string, scanStatus?: string): Promise<void> {
    const ds = app.get(DataSource);
    await ds.query(`UPDATE files SET state = ${p(ds.manager, 1)}, scan_status = ${p(ds.manager, 2)} WHERE id = ${p(ds.manager, 3)}`, [
      state,
      scanStatus ?? 'clean',
      fileId,
    ]);
  },
};

/** Moves a link's expiry into the past, as time passing would. */
export async function expireShare(app: INestApplicationContext, shareId: string): Promise<void> {
  const ds = app.get(DataSource);
  await ds.query(`UPDATE shares SET expires_at = ${p(ds.manager, 1)} WHERE id = ${p(ds.manager, 2)}`, [new Date(Date.now() - 1000).toISOString(), shareId]);
}

export async function shareRow(app: INestApplicationContext, shareId: string): Promise<Record<string, unknown>> {
  const ds = app.get(DataSource);
  const rows = await ds.query(`SELECT * FROM shares WHERE id = ${p(ds.manager, 1)}`, [shareId]);
  return rows[0];
}

/** The outbox events of an account, oldest first, with their data parsed. */
export async function outboxEvents(app: INestApplicationContext, account: TestAccount, event?: string) {
  const rows = await app.get(DataSource).getRepository(OutboxEventEntity).find({ where: { accountId: account.accountId, ...(event ? { event } : {}) }, order: { occurredAt: 'ASC', id: 'ASC' } });
  return rows.map((row) => ({ event: row.event, occurredAt: row.occurredAt, data: JSON.parse(row.payload) as Record<string, unknown> }));
}

/** Creates a share link through the API and returns its record and token. */
export async function createShare(t: TestApp, account: TestAccount, body: Record<string, unknown>) {
  const res = await t.http().post('/v1/shares').set(account.auth).send(body);
  if (res.status !== 201) throw new Error(`share creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  const share = res.body.data as { id: string; url: string; file_id: string; expires_at: string | null; access_count: number };
  return { ...share, token: share.url.split('/s/')[1], path: `/s/${share.url.split('/s/')[1]}` };
}

function p(manager: { connection: { options: { type: string } } }, index: number): string {
  return manager.connection.options.type === 'postgres' ? `$${index}` : '?';
}
