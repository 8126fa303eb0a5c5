import { Module } from '@nestjs/common';
import { MediaStartup } from './media-startup.js';
import { MediaModule } from './media.module.js';
import { ScansProcessor } from './processors/scans.processor.js';
import { ThumbnailsProcessor } from './processors/thumbnails.processor.js';

/** The thumbnail and scan workers; imported by the server only, never by the CLI. */
@Module({
  imports: [MediaModule],
  providers: [ThumbnailsProcessor, ScansProcessor, MediaStartup],
  exports: [MediaModule],
})
export class MediaWorkersModule {}
