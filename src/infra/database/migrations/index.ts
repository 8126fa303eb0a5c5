import { Foundation1763780000000 } from './1763780000000-foundation.js';
import { Webhooks1763785000000 } from './1763785000000-webhooks.js';

/** Every migration, oldest first. */
export const MIGRATIONS = [Foundation1763780000000, Webhooks1763785000000];
