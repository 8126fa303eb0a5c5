import { Injectable } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import type { Request, Response } from 'express';
import { ApiError, ServiceUnavailable } from '../../common/errors/api-error.js';
import { BlobPlacements } from '../../infra/storage/blob-placements.js';
import { type BlobDescription, sendBlob } from '../../infra/storage/blob-response.js';
import { BlobStorage } from '../../infra/storage/blob-storage.js';
import { FileBytesArrivingQuery } from './queries/file-bytes-arriving.query.js';

/** The answer FileContentResponse gives while another server process still moves the bytes, for ApiErrors. */
export const CONTENT_ARRIVING_ANSWER: [number, string] = [503, "service_unavailable: the file's new content is still being stored (an upload that another server process took); see Retry-After."];

/**
 * Sends a file's content, through a signed link or a share link. An upload (or overwrite) commits its row before it
 * moves the bytes to the key the row names: a download in between waits for a move this process makes (a map lookup
 * when nothing is being placed), and is answered 503 with Retry-After while another server process makes it, rather
 * than failing on a missing blob.
 */
@Injectable()
export class FileContentResponse {
  constructor(
    private readonly queries: QueryBus,
    private readonly placements: BlobPlacements,
    private readonly storage: BlobStorage,
  ) {}

  async send(request: Request, response: Response, fileId: string, content: BlobDescription, now: Date): Promise<void> {
    // Stored bytes are anyone's content on our origin: should a browser ever render them (a proxy dropping
    // Content-Disposition, an old browser), they run as a sandboxed document without scripts or requests.
    response.setHeader('Content-Security-Policy', "sandbox; default-src 'none'");
    await this.placements.settled([content.key]);
    try {
      await sendBlob(request, response, this.storage, content, now);
    } catch (error) {
      const unreadable = !(error instanceof ApiError) && !response.headersSent;
      if (unreadable && (await this.queries.execute(new FileBytesArrivingQuery(fileId)))) {
        throw new ServiceUnavailable('The file\'s new content is still being stored; retry in a moment.');
      }
      throw error;
    }
  }
}
