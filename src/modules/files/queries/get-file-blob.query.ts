import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { createHash } from 'node:crypto';
import { Repository } from 'typeorm';
import { Clock } from '../../../common/clock.js';
import { FileInfected, NotFound, PermissionDenied } from '../../../common/errors/api-error.js';
import type { BlobDescription } from '../../../infra/storage/blob-response.js';
import { preparedQuery } from '../../../infra/database/prepared-statements.js';
import { sqlDialect } from '../../../infra/database/sql-dialect.js';
import { BlobStorage } from '../../../infra/storage/blob-storage.js';
import { UrlSigner } from '../../../infra/storage/url-signer.js';
import { downloadPath, thumbnailPath } from '../dto/file.response.js';
import { FileEntity } from '../file.entity.js';

export type BlobKind = 'content' | 'thumbnail';

/** The columns of `files` a signed link's answer needs, as the driver returns them (BIGINT may be a string). */
interface BlobRow {
  name: string;
  size: number | string;
  mime_type: string;
  md5: string;
  blob_key: string;
  thumbnail_key: string | null;
  scan_status: string;
  modified_at: string;
}

export class GetFileBlobQuery extends Query<BlobDescription> {
  constructor(
    readonly fileId: string,
    readonly kind: BlobKind,
    readonly expires: string | undefined,
    readonly signature: string | undefined,
  ) {
    super();
  }
}

/**
 * What a signed download (or thumbnail) link serves. The signature is checked first (an HMAC, no I/O),
 * so nothing about a file is revealed to someone without a valid link; then one query finds the file,
 * which must still be active and not quarantined.
 */
@QueryHandler(GetFileBlobQuery)
export class GetFileBlobHandler implements IQueryHandler<GetFileBlobQuery> {
  private readonly sql: string;

  constructor(
    @InjectRepository(FileEntity) private readonly files: Repository<FileEntity>,
    private readonly signer: UrlSigner,
    private readonly clock: Clock,
    private readonly storage: BlobStorage,
  ) {
    this.sql = `SELECT name, size, mime_type, md5, blob_key, thumbnail_key, scan_status, modified_at FROM files WHERE id = ${sqlDialect(files.manager).parameter(1)} AND state = 'active'`;
  }

  async execute({ fileId, kind, expires, signature }: GetFileBlobQuery): Promise<BlobDescription> {
    const path = kind === 'content' ? downloadPath(fileId) : thumbnailPath(fileId);
    if (!this.signer.verify(path, expires, signature, this.clock.now())) {
      throw new PermissionDenied('The link is invalid or has expired; list the file again for a fresh one.');
    }
    // One indexed read by primary key, of only what the answer needs, prepared once per connection: it runs before every download's first byte.
    const [row] = await preparedQuery<BlobRow>(this.files.manager, 'file_blob', this.sql, [fileId]);
    if (!row) throw new NotFound('file', fileId);
    const file = { name: row.name, size: Number(row.size), mimeType: row.mime_type, md5: row.md5, blobKey: row.blob_key, thumbnailKey: row.thumbnail_key, scanStatus: row.scan_status, modifiedAt: new Date(row.modified_at) };
    if (file.scanStatus === 'infected') throw new FileInfected();
    if (kind === 'content') {
      // Bytes still on their way to blobKey are waited for by FileContentResponse, which sends them.
      return { key: file.blobKey, size: file.size, md5: file.md5, contentType: file.mimeType, fileName: file.name, modifiedAt: file.modifiedAt, disposition: 'attachment' };
    }
    if (!file.thumbnailKey) throw new NotFound('thumbnail of file', fileId);
    // The row keeps no thumbnail size: the blob tells it.
    const stat = await this.storage.stat(file.thumbnailKey);
    if (!stat) throw new NotFound('thumbnail of file', fileId);
    const base = file.name.includes('.') ? file.name.slice(0, file.name.lastIndexOf('.')) : file.name;
    return {
      key: file.thumbnailKey,
      size: stat.size,
      // The thumbnail key changes with every version, so its hash is a sound strong ETag.
      md5: createHash('md5').update(file.thumbnailKey).digest('hex'),
      contentType: 'image/webp',
      fileName: `${base}.webp`,
      modifiedAt: file.modifiedAt,
      disposition: 'inline',
    };
  }
}
