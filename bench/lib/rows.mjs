import { createHash, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';

const WORDS = ['report', 'invoice', 'holiday', 'scan', 'draft', 'budget', 'photo', 'notes', 'contract', 'summary', 'backup', 'design', 'meeting', 'plan', 'receipt', 'slides', 'export', 'letter', 'sketch', 'archive'];
const TYPES = [
  ['pdf', 'application/pdf', 'document'],
  ['jpg', 'image/jpeg', 'image'],
  ['png', 'image/png', 'image'],
  ['txt', 'text/plain', 'document'],
  ['zip', 'application/zip', 'archive'],
  ['mp4', 'video/mp4', 'video'],
  ['mp3', 'audio/mpeg', 'audio'],
  ['bin', 'application/octet-stream', 'other'],
];
const YEAR_MS = 365 * 24 * 3600 * 1000;

export const newId = (prefix) => `${prefix}_${uuidv7().replaceAll('-', '')}`;

/**
 * One row of the `files` table (migration 1763790000000) as the upload command would write it:
 * root folder (folder_key ''), name_key the lower-cased name, a blob key built from ids. Names are
 * two dictionary words and a number, so a one-word search matches about a tenth of the files.
 */
export function fileRow(account, i, { state = 'active', now = Date.now(), blobKey, size } = {}) {
  const id = newId('file');
  const [ext, mime, category] = TYPES[i % TYPES.length];
  const name = `${WORDS[(i * 7) % WORDS.length]}-${WORDS[(i * 13 + 5) % WORDS.length]} ${i}.${ext}`;
  const created = new Date(now - Math.floor(Math.random() * YEAR_MS)).toISOString();
  return {
    id,
    account_id: account.accountId,
    folder_id: null,
    folder_key: '',
    name,
    name_key: name.toLowerCase(),
    size: size ?? 1 + Math.floor(Math.random() * 5_000_000),
    mime_type: mime,
    category,
    md5: createHash('md5').update(id).digest('hex'),
    blob_key: blobKey ?? `files/${account.accountId}/${id}/${newId('upl')}`,
    state,
    scan_status: 'clean',
    thumbnail_key: null,
    uploaded_by: account.userId,
    created_at: created,
    modified_at: created,
    deleted_at: null,
    deleted_by: null,
    recoverable_until: null,
  };
}

/** Inserts n file rows in chunks and adds their sizes to the account's storage_used, as uploads would. */
export async function insertFiles(db, account, n, options = {}) {
  const chunk = 10_000;
  let total = 0;
  const made = [];
  for (let i = 0; i < n; i += chunk) {
    const rows = [];
    for (let j = i; j < Math.min(n, i + chunk); j++) rows.push(options.row ? options.row(j) : fileRow(account, j, options));
    await db.insertMany('files', rows);
    for (const row of rows) {
      total += row.size;
      if (options.keep) made.push(row);
    }
  }
  await db.query('UPDATE accounts SET storage_used = storage_used + $1 WHERE id = $2', [total, account.accountId]);
  await db.analyze('files');
  return { bytes: total, rows: made };
}

export { randomBytes };
