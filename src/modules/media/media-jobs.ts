import { createHash } from 'node:crypto';
import type { JobsOptions } from 'bullmq';

/** What a thumbnail or scan job works on: one stored version of one file. */
export interface MediaJobData {
  fileId: string;
  accountId: string;
  blobKey: string;
}

/** Thumbnails exist only for images, videos and PDFs. */
export function thumbnailKind(mimeType: string): 'image' | 'video' | 'pdf' | null {
  const type = mimeType.toLowerCase().split(';')[0].trim();
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('video/')) return 'video';
  if (type === 'application/pdf') return 'pdf';
  return null;
}

/**
 * One job id per (queue, file, version): enqueueing the same stored version twice is a no-op, a new
 * version gets a new job. BullMQ reserves ':' in ids, so the blob key is hashed rather than embedded.
 */
export function mediaJobId(kind: 'thumbnail' | 'scan', fileId: string, blobKey: string): string {
  return `${kind}-${fileId}-${createHash('sha256').update(blobKey).digest('hex').slice(0, 24)}`;
}

/**
 * Transient failures (clamd or storage unreachable) retry with exponential backoff; failures that
 * cannot get better (corrupt media) throw UnrecoverableError and are not retried at all.
 * Thumbnails: 5 attempts (delay, 2x, 4x, 8x). Scans wait longer for clamd to come back: 10 attempts.
 */
export function mediaJobOptions(kind: 'thumbnail' | 'scan', jobId: string, retryDelayMs: number): JobsOptions {
  return {
    jobId,
    attempts: kind === 'scan' ? 10 : 5,
    backoff: { type: 'exponential', delay: retryDelayMs },
  };
}

/** The repeatable job (on the scans queue) that reschedules media work whose event was lost. */
export const STALLED_MEDIA_SWEEP = 'stalled-media-sweep';
export const STALLED_MEDIA_SWEEP_EVERY_MS = 10 * 60 * 1000;
