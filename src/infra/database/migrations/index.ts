import { Foundation1763780000000 } from './1763780000000-foundation.js';
import { FilesFoldersShares1763790000000 } from './1763790000000-files-folders-shares.js';
import { FileMedia1763810000000 } from './1763810000000-file-media.js';

/** Every migration, oldest first. */
export const MIGRATIONS = [Foundation1763780000000, FilesFoldersShares1763790000000, FileMedia1763810000000];
