import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { FileEntity } from '../files/file.entity.js';
import { GenerateThumbnailHandler } from './commands/generate-thumbnail.command.js';
import { RecordMediaFailureHandler } from './commands/record-media-failure.command.js';
import { RescheduleStalledMediaHandler } from './commands/reschedule-stalled-media.command.js';
import { ScanFileHandler } from './commands/scan-file.command.js';
import { ScheduleMediaWorkHandler } from './commands/schedule-media-work.command.js';
import { ScheduleUploadedMediaHandler } from './commands/schedule-uploaded-media.command.js';
import { ScheduleMediaWorkOnFileStored } from './events/file-stored.handler.js';
import { ScheduleMediaWorkOnUploadsRelayed } from './events/outbox-relayed.handler.js';
import { FileMediaEntity } from './file-media.entity.js';
import { GetFileMediaHandler } from './queries/get-file-media.query.js';
import { MediaTools } from './thumbnails/media-tools.js';
import { ThumbnailRenderer } from './thumbnails/thumbnail-renderer.js';

/**
 * Thumbnails and virus scans, made in the background after new bytes are stored. This module
 * schedules and does the work; MediaWorkersModule (server only) runs the queue workers.
 */
@Module({
  imports: [TypeOrmModule.forFeature([FileEntity, FileMediaEntity])],
  providers: [
    ScheduleMediaWorkOnFileStored,
    ScheduleMediaWorkHandler,
    ScheduleMediaWorkOnUploadsRelayed,
    ScheduleUploadedMediaHandler,
    GenerateThumbnailHandler,
    ScanFileHandler,
    RecordMediaFailureHandler,
    RescheduleStalledMediaHandler,
    GetFileMediaHandler,
    ThumbnailRenderer,
    MediaTools,
  ],
  exports: [MediaTools],
})
export class MediaModule {}
