import type { EntityManager } from 'typeorm';
import { Outbox } from '../../infra/outbox/outbox.js';
import { AccountEntity } from '../accounts/account.entity.js';
import { PLANS } from '../accounts/plans.js';
import { StorageExceeded } from '../../common/errors/api-error.js';
import { quotaExceeded, storageWarning } from './events/file-events.js';

/** The account's quota in SQL: its own limit when set, else its plan's. */
export const STORAGE_LIMIT_SQL =
  `COALESCE(storage_limit_override, CASE plan WHEN 'free' THEN ${PLANS.free.storageLimit} ` +
  `WHEN 'pro' THEN ${PLANS.pro.storageLimit} ELSE ${PLANS.enterprise.storageLimit} END)`;

const WARNING_THRESHOLDS = [80, 90] as const;

function wholeBytes(n: number): number {
  if (!Number.isSafeInteger(n)) throw new Error(`Not a byte count: ${n}`);
  return n;
}

/**
 * Adds `bytes` to the account's reserved storage if used + reserved + bytes still fits the quota.
 * One conditional UPDATE: atomic on PostgreSQL (the row lock re-checks the condition) and on SQLite
 * (transactions take turns), so concurrent uploads can never promise more than the quota.
 * `credit` is storage the upload will free when it commits (the file an overwrite replaces), so only
 * the net change has to fit.
 */
export async function tryReserveStorage(tx: EntityManager, accountId: string, bytes: number, credit = 0): Promise<boolean> {
  const n = wholeBytes(bytes);
  const freed = wholeBytes(credit);
  const result = await tx
    .createQueryBuilder()
    .update(AccountEntity)
    .set({ storageReserved: () => `storage_reserved + ${n}` })
    .where('id = :accountId', { accountId })
    .andWhere(`storage_used + storage_reserved + ${n} <= ${STORAGE_LIMIT_SQL} + ${freed}`)
    .execute();
  return (result.affected ?? 0) > 0;
}

/**
 * Changes the account's used (and reserved) bytes and announces storage.warning when usage
 * crosses 80% or 90% upward, once per crossing (the level falls back when usage drops).
 */
export async function changeStorageUsage(
  tx: EntityManager,
  accountId: string,
  change: { used: number; reserved?: number },
  now: Date,
): Promise<AccountEntity> {
  const used = wholeBytes(change.used);
  const reserved = wholeBytes(change.reserved ?? 0);
  if (used !== 0 || reserved !== 0) {
    await tx
      .createQueryBuilder()
      .update(AccountEntity)
      .set({ storageUsed: () => `storage_used + (${used})`, storageReserved: () => `storage_reserved + (${reserved})` })
      .where('id = :accountId', { accountId })
      .execute();
  }
  // Read after our own UPDATE: on PostgreSQL the row lock is ours until commit, so this is the latest state.
  const account = await tx.getRepository(AccountEntity).findOneByOrFail({ id: accountId });
  const limit = account.storageLimit;
  const percentage = limit > 0 ? Math.floor((account.storageUsed * 100) / limit) : 100;
  const level = [...WARNING_THRESHOLDS].reverse().find((t) => percentage >= t) ?? 0;
  if (level !== account.storageWarningLevel) {
    const crossed = WARNING_THRESHOLDS.filter((t) => t > account.storageWarningLevel && t <= level);
    await tx.getRepository(AccountEntity).update({ id: accountId }, { storageWarningLevel: level });
    account.storageWarningLevel = level;
    await Outbox.record(tx, ...crossed.map((threshold) => storageWarning(accountId, now, { used: account.storageUsed, limit, percentage, threshold })));
  }
  return account;
}

/**
 * The refusal of an upload of `required` bytes that does not fit: records user.quota_exceeded
 * (overage = used + reserved + required - limit) and answers storage_exceeded with the same figures.
 */
export async function refuseOverQuota(tx: EntityManager, accountId: string, required: number, now: Date): Promise<StorageExceeded> {
  const account = await tx.getRepository(AccountEntity).findOneByOrFail({ id: accountId });
  const current = account.storageUsed + account.storageReserved;
  const limit = account.storageLimit;
  await Outbox.record(tx, quotaExceeded(accountId, now, { used: current, limit, overage: current + required - limit }));
  return new StorageExceeded(current, limit, required);
}
