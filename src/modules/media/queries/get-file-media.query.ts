import { Query, QueryHandler, IQueryHandler } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { FileEntity } from '../../files/file.entity.js';
import { FileMediaEntity, type ThumbnailStatus } from '../file-media.entity.js';

/** Where a file's background media work stands, for operators (CLI, logs) and tests. */
export interface FileMediaState {
  fileId: string;
  scanStatus: FileEntity['scanStatus'];
  thumbnailKey: string | null;
  /** Null when no media work was ever scheduled for the file's current bytes. */
  thumbnailStatus: ThumbnailStatus | null;
  thumbnailError: string | null;
  scanThreat: string | null;
  scanNote: string | null;
  scannedAt: Date | null;
}

export class GetFileMediaQuery extends Query<FileMediaState | null> {
  constructor(readonly fileId: string) {
    super();
  }
}

@QueryHandler(GetFileMediaQuery)
export class GetFileMediaHandler implements IQueryHandler<GetFileMediaQuery> {
  constructor(private readonly dataSource: DataSource) {}

  async execute({ fileId }: GetFileMediaQuery): Promise<FileMediaState | null> {
    const file = await this.dataSource.getRepository(FileEntity).findOneBy({ id: fileId });
    if (!file) return null;
    const found = await this.dataSource.getRepository(FileMediaEntity).findOneBy({ fileId });
    // Bookkeeping for an older version says nothing about the current bytes.
    const media = found?.blobKey === file.blobKey ? found : null;
    return {
      fileId,
      scanStatus: file.scanStatus,
      thumbnailKey: file.thumbnailKey,
      thumbnailStatus: media?.thumbnailStatus ?? null,
      thumbnailError: media?.thumbnailError ?? null,
      scanThreat: media?.scanThreat ?? null,
      scanNote: media?.scanNote ?? null,
      scannedAt: media?.scannedAt ?? null,
    };
  }
}
