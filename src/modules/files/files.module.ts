import { Module } from '@nestjs/common';
import { FileContentResponse } from './file-content-response.js';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountEntity } from '../accounts/account.entity.js';
import { FolderEntity } from '../folders/folder.entity.js';
import { ShareEntity } from '../shares/share.entity.js';
import { BulkDeleteFilesHandler } from './commands/bulk-delete-files.command.js';
import { DeleteFileHandler } from './commands/delete-file.command.js';
import { RestoreFileHandler } from './commands/restore-file.command.js';
import { UpdateFileHandler } from './commands/update-file.command.js';
import { UploadFileHandler } from './commands/upload-file.command.js';
import { FileEntity } from './file.entity.js';
import { FileDownloadsController, FilesController } from './files.controller.js';
import { FileBytesArrivingHandler } from './queries/file-bytes-arriving.query.js';
import { GetFileHandler } from './queries/get-file.query.js';
import { GetFileBlobHandler } from './queries/get-file-blob.query.js';
import { ListFilesHandler } from './queries/list-files.query.js';
import { ListingTotals } from './queries/listing-totals.js';
import { FinishedUploads } from './upload/finished-uploads.js';
import { PageAnchors } from './queries/page-anchors.js';
import { UploadInterceptor } from './upload/upload.interceptor.js';
import { UploadHasher } from './upload/hashing/upload-hasher.js';
import { UploadReceiver } from './upload/upload-receiver.js';
import { UploadReservationEntity } from './upload/upload-reservation.entity.js';
import { UploadSweeper } from './upload/upload-sweeper.js';

@Module({
  imports: [TypeOrmModule.forFeature([FileEntity, FolderEntity, ShareEntity, AccountEntity, UploadReservationEntity])],
  controllers: [FilesController, FileDownloadsController],
  providers: [
    UploadHasher,
    UploadReceiver,
    UploadInterceptor,
    UploadSweeper,
    FinishedUploads,
    UploadFileHandler,
    UpdateFileHandler,
    DeleteFileHandler,
    BulkDeleteFilesHandler,
    RestoreFileHandler,
    ListFilesHandler,
    ListingTotals,
    PageAnchors,
    GetFileHandler,
    GetFileBlobHandler,
    FileBytesArrivingHandler,
    FileContentResponse,
  ],
  exports: [UploadSweeper, UploadReceiver, UploadHasher, FileContentResponse],
})
export class FilesModule {}
