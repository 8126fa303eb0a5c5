import { Foundation1763780000000 } from './1763780000000-foundation.js';
import { FilesFoldersShares1763790000000 } from './1763790000000-files-folders-shares.js';

/** Every migration, oldest first. */
export const MIGRATIONS = [Foundation1763780000000, FilesFoldersShares1763790000000];
