import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { newId } from '../../src/common/ids.js';
import { AccountEntity } from '../../src/modules/accounts/account.entity.js';
import { FileEntity, type FileCategory } from '../../src/modules/files/file.entity.js';
import { BlobStorage, blobKeys } from '../../src/infra/storage/blob-storage.js';
import type { TestAccount } from './accounts.js';
import { eventually } from './time.js';

/**
 * Puts a file straight into the database and blob storage, bypassing the upload route: set-up for
 * tests of features that start from an existing file (shares, media). Tests of uploading itself
 * go through POST /v1/files/upload.
 */
export async function seedFile(
  app: INestApplicationContext,
  account: TestAccount,
  options: { name?: string; content?: Buffer | string; mimeType?: string; category?: FileCategory; folderId?: string | null } = {},
): Promise<FileEntity> {
  const content = Buffer.isBuffer(options.content) ? options.content : Buffer.from(options.content ?? 'hello, world\n');
  const name = options.name ?? `seeded-${Date.now()}-${Math.random().toString(36).slice(2)}.txt`;
  const id = newId('file');
  const blobKey = blobKeys.file(account.accountId, id, newId('upl'));
  await app.get(BlobStorage).write(blobKey, Readable.from([content]));
  const now = new Date();
  const file = Object.assign(new FileEntity(), {
    id,
    accountId: account.accountId,
    folderId: options.folderId ?? null,
    folderKey: options.folderId ?? '',
    name,
    nameKey: name.toLowerCase(),
    size: content.length,
    mimeType: options.mimeType ?? 'text/plain',
    category: options.category ?? 'document',
    md5: createHash('md5').update(content).digest('hex'),
    blobKey,
    state: 'active',
    scanStatus: 'clean',
    thumbnailKey: null,
    uploadedBy: account.userId,
    createdAt: now,
    modifiedAt: now,
    deletedAt: null,
    deletedBy: null,
    recoverableUntil: null,
  } satisfies Partial<FileEntity>);
  const dataSource = app.get(DataSource);
  await dataSource.getRepository(FileEntity).insert(file);
  await dataSource.getRepository(AccountEntity).increment({ id: account.accountId }, 'storageUsed', content.length);
  return file;
}

/** An account's storage counters next to the sum of its stored files' sizes, which `used` must equal. */
export async function storageOf(app: INestApplicationContext, accountId: string) {
  const ds = app.get(DataSource);
  const account = await ds.getRepository(AccountEntity).findOneByOrFail({ id: accountId });
  const stored = await ds.getRepository(FileEntity).findBy({ accountId });
  return { used: account.storageUsed, reserved: account.storageReserved, sumOfFiles: stored.reduce((n, f) => n + f.size, 0) };
}

/**
 * Waits until the background scan of an upload has given its verdict (fails when it does not come),
 * so a test that sets scan_status itself cannot have it overwritten by a late scan.
 */
export async function scanSettled(app: INestApplicationContext, fileId: string, timeoutMs = 20_000): Promise<FileEntity> {
  const files = app.get(DataSource).getRepository(FileEntity);
  return eventually(async () => {
    const file = await files.findOneByOrFail({ id: fileId });
    return file.scanStatus !== 'pending' && file;
  }, timeoutMs, `the background scan of ${fileId}`);
}
