import { IsNull, type EntityManager } from 'typeorm';
import type { Actor } from '../../common/auth/actor.js';
import type { Scope } from '../../common/auth/scopes.js';
import { AuthenticationFailed, PermissionDenied } from '../../common/errors/api-error.js';
import { sqlDialect } from '../../infra/database/sql-dialect.js';
import { ApiKeyEntity } from './api-key.entity.js';

/** The powers of a key: what it may do and whether it is elevated. */
export interface KeyPowers {
  scopes: readonly Scope[];
  elevated: boolean;
}

/**
 * A key may create or revoke only keys with no more power than its own: scopes that are a subset of
 * its own, and elevation only if it is elevated itself. So a key can never raise its own access, and
 * can never take away a stronger key of its account.
 */
export function assertKeyWithinPowers(actor: Actor, target: KeyPowers, action: 'create' | 'revoke'): void {
  const beyond = target.scopes.filter((scope) => !actor.scopes.includes(scope));
  if (beyond.length > 0) {
    throw new PermissionDenied(`This key may not ${action} a key with scopes it does not hold itself: ${beyond.join(', ')}.`, {
      missing_scopes: beyond,
    });
  }
  if (target.elevated && !actor.elevated) {
    throw new PermissionDenied(`Only an elevated key may ${action} an elevated key.`);
  }
}

/**
 * What a key creates that acts later on the account's behalf (another key, a webhook receiving its events) is created
 * only while that key is still live: it was checked when the request arrived, and a key revoked since (a leaked key
 * being shut off) must leave nothing behind. Inside the creating transaction: the key row is share-locked, so a
 * revocation either waits for the creation or is seen by it.
 */
export async function assertCallingKeyStillLive(tx: EntityManager, actor: Pick<Actor, 'keyId'>): Promise<void> {
  const live = await tx.getRepository(ApiKeyEntity).findOne({ where: { id: actor.keyId, revokedAt: IsNull() }, select: { id: true }, ...sqlDialect(tx).lockForShare<ApiKeyEntity>() });
  if (!live) throw new AuthenticationFailed('The API key is not valid or has been revoked.');
}
