import { Foundation1763780000000 } from './1763780000000-foundation.js';

/** Every migration, oldest first. */
export const MIGRATIONS = [Foundation1763780000000];
