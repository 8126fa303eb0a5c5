import { randomBytes, scrypt } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { OutboxEventEntity } from '../../../src/infra/outbox/outbox-event.entity.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { ShareEntity } from '../../../src/modules/shares/share.entity.js';
import type { TestAccount } from '../../support/accounts.js';
import type { TestApp } from '../../support/test-app.js';

/**
 * A file leaving the active state, through the files routes themselves, so the tests meet the real
 * trash rule (links invalidated with the file); plus two states no route makes, set straight on the row.
 */
export const fileLifecycle = {
  async moveToTrash(t: TestApp, account: TestAccount, fileId: string): Promise<void> {
    await t.http().delete(`/v1/files/${fileId}`).set(account.auth).expect(200);
  },
  async restore(t: TestApp, account: TestAccount, fileId: string): Promise<void> {
    await t.http().post(`/v1/files/${fileId}/restore`).set(account.auth).expect(200);
  },
  async deletePermanently(t: TestApp, account: TestAccount, fileId: string): Promise<void> {
    await t.http().delete(`/v1/files/${fileId}?permanent=true`).set(account.auth).expect(200);
  },
  /** A file row gone by some other path, its links not (yet) marked. */
  async removeRowOnly(app: INestApplicationContext, fileId: string): Promise<void> {
    await app.get(DataSource).getRepository(FileEntity).delete({ id: fileId });
  },
  /** A file that left the active state (or was found infected) by some other path, its links not (yet) marked. */
  async setState(app: INestApplicationContext, fileId: string, state: FileEntity['state'], scanStatus: FileEntity['scanStatus'] = 'clean'): Promise<void> {
    await app.get(DataSource).getRepository(FileEntity).update({ id: fileId }, { state, scanStatus });
  },
};

/** Moves a link's expiry into the past, as time passing would. */
export async function expireShare(app: INestApplicationContext, shareId: string): Promise<void> {
  await app.get(DataSource).getRepository(ShareEntity).update({ id: shareId }, { expiresAt: new Date(Date.now() - 1000) });
}

/** The link's row as stored, column names as in the database. */
export async function shareRow(app: INestApplicationContext, shareId: string): Promise<Record<string, unknown>> {
  return (await app.get(DataSource).createQueryBuilder().select('*').from('shares', 's').where('s.id = :shareId', { shareId }).getRawOne())!;
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

/**
 * Gives a link's password a hash that takes `slowdown` times as long to check as a new one (scrypt's p, which the
 * stored string carries, as an older and costlier hash would), so requests that arrive together overlap its check.
 */
export async function slowDownPasswordCheck(app: INestApplicationContext, shareId: string, password: string, slowdown = 8): Promise<void> {
  const [N, r, p] = [2 ** 15, 8, slowdown];
  const salt = randomBytes(16);
  const key = await new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize('NFC'), salt, 32, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 }, (error, derived) => (error ? reject(error) : resolve(derived))),
  );
  const passwordHash = `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
  await app.get(DataSource).getRepository(ShareEntity).update({ id: shareId }, { passwordHash });
}
