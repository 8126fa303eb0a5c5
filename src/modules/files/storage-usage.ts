import type { EntityManager } from 'typeorm';
import { Outbox } from '../../infra/outbox/outbox.js';
import { AccountEntity } from '../accounts/account.entity.js';
import { PLANS } from '../accounts/plans.js';
import { StorageExceeded } from '../../common/errors/api-error.js';
import { quotaExceeded, storageWarning } from './events/file-events.js';
import { sqlDialect } from '../../infra/database/sql-dialect.js';

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

/** The account figures an UPDATE ... RETURNING hands back: exactly what the quota and the warnings need. */
const RETURNED = `storage_used, storage_reserved, storage_warning_level, ${STORAGE_LIMIT_SQL} AS storage_limit`;

/**
 * Changes the account's used (and reserved) bytes in one UPDATE ... RETURNING and announces
 * storage.warning when usage crosses 80% or 90% upward, once per crossing (the level falls back
 * when usage drops). With `mustFit`, a growth of used storage is refused (null, nothing changed)
 * when it would take used + reserved past the quota: the quota check and the charge are one
 * statement, so the row is locked from that statement to the commit and no longer.
 */
export async function changeStorageUsage(
  tx: EntityManager,
  accountId: string,
  change: { used: number; reserved?: number; mustFit?: boolean },
  now: Date,
): Promise<StorageFigures | null> {
  const used = wholeBytes(change.used);
  const reserved = wholeBytes(change.reserved ?? 0);
  let account: StorageFigures | undefined;
  if (used === 0 && reserved === 0) {
    const rows: RawFigures[] = await tx.query(`SELECT ${RETURNED} FROM accounts WHERE id = ${sqlDialect(tx).parameter(1)}`, [accountId]);
    account = rows[0] && figuresOf(rows[0]);
  } else {
    if (!tx.queryRunner) throw new Error('changeStorageUsage runs inside a transaction');
    const fits = change.mustFit && used > 0 ? ` AND storage_used + storage_reserved + ${used + reserved} <= ${STORAGE_LIMIT_SQL}` : '';
    const result = await tx.queryRunner.query(
      `UPDATE accounts SET storage_used = storage_used + (${used}), storage_reserved = storage_reserved + (${reserved}) ` +
        `WHERE id = ${sqlDialect(tx).parameter(1)}${fits} RETURNING ${RETURNED}`,
      [accountId],
      true,
    );
    const rows = result.records as RawFigures[];
    account = rows[0] && figuresOf(rows[0]);
  }
  if (!account) {
    if (change.mustFit) return null;
    throw new Error(`No account ${accountId}`);
  }
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

/** An account's storage counters as one statement read or changed them. */
export interface StorageFigures {
  storageUsed: number;
  storageReserved: number;
  storageLimit: number;
  storageWarningLevel: number;
}

interface RawFigures {
  storage_used: string | number;
  storage_reserved: string | number;
  storage_limit: string | number;
  storage_warning_level: string | number;
}

function figuresOf(row: RawFigures): StorageFigures {
  return {
    storageUsed: Number(row.storage_used),
    storageReserved: Number(row.storage_reserved),
    storageLimit: Number(row.storage_limit),
    storageWarningLevel: Number(row.storage_warning_level),
  };
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
