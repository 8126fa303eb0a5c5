import { Query, QueryHandler, type IQueryHandler } from '@nestjs/cqrs';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { BlobStorage } from '../../../infra/storage/blob-storage.js';
import { UploadReservationEntity } from '../upload/upload-reservation.entity.js';

/**
 * Whether a committed upload's bytes are still on their way to the key the file row names, in whichever server
 * process took the upload: its reservation row names the file, and its bytes are still at their temporary key.
 */
export class FileBytesArrivingQuery extends Query<boolean> {
  constructor(readonly fileId: string) {
    super();
  }
}

@QueryHandler(FileBytesArrivingQuery)
export class FileBytesArrivingHandler implements IQueryHandler<FileBytesArrivingQuery> {
  constructor(
    @InjectRepository(UploadReservationEntity) private readonly reservations: Repository<UploadReservationEntity>,
    private readonly storage: BlobStorage,
  ) {}

  async execute({ fileId }: FileBytesArrivingQuery): Promise<boolean> {
    const uploads = await this.reservations.find({ select: { id: true, tempKey: true }, where: { fileId } });
    for (const upload of uploads) if (await this.storage.exists(upload.tempKey)) return true;
    return false;
  }
}
