import type { Actor } from '../../common/auth/actor.js';
import type { Scope } from '../../common/auth/scopes.js';
import { PermissionDenied } from '../../common/errors/api-error.js';

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
