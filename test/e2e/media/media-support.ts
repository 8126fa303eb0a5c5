import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { freePort } from '../../support/processes.js';
import { eventually } from '../../support/time.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { INestApplicationContext } from '@nestjs/common';
import { getQueueToken } from '@nestjs/bullmq';
import { EventBus } from '@nestjs/cqrs';
import type { Job, Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { newId } from '../../../src/common/ids.js';
import { QUEUES } from '../../../src/infra/queue/queue-names.js';
import { BlobStorage, blobKeys } from '../../../src/infra/storage/blob-storage.js';
import { FileStoredEvent } from '../../../src/modules/files/events/file-stored.event.js';
import { FileEntity } from '../../../src/modules/files/file.entity.js';
import { mediaJobId } from '../../../src/modules/media/media-jobs.js';

/** Set-up for the media tests: a real clamd, the media queues, and "upload" as the files module does it. */

export function thumbnailsQueue(app: INestApplicationContext): Queue {
  return app.get<Queue>(getQueueToken(QUEUES.thumbnails));
}

export function scansQueue(app: INestApplicationContext): Queue {
  return app.get<Queue>(getQueueToken(QUEUES.scans));
}

/** What the upload route does once the file row has committed. */
export function publishStored(app: INestApplicationContext, file: FileEntity): void {
  app.get(EventBus).publish(new FileStoredEvent(file.id, file.accountId, file.blobKey));
}

/** Replaces a file's bytes the way an overwrite does: new blob key, same id. */
export async function overwrite(app: INestApplicationContext, file: FileEntity, content: Buffer, mimeType: string): Promise<FileEntity> {
  const blobKey = blobKeys.file(file.accountId, file.id, newId('upl'));
  await app.get(BlobStorage).write(blobKey, Readable.from([content]));
  const repository = app.get(DataSource).getRepository(FileEntity);
  await repository.update({ id: file.id }, { blobKey, mimeType, size: content.length, modifiedAt: new Date() });
  return (await repository.findOneByOrFail({ id: file.id }))!;
}

export async function reload(app: INestApplicationContext, fileId: string): Promise<FileEntity | null> {
  return app.get(DataSource).getRepository(FileEntity).findOneBy({ id: fileId });
}

/** Waits (bounded) until the job for this file version has finished for good, then returns it. */
export async function settledJob(queue: Queue, kind: 'thumbnail' | 'scan', file: Pick<FileEntity, 'id' | 'blobKey'>, timeoutMs = 20_000): Promise<Job> {
  const jobId = mediaJobId(kind, file.id, file.blobKey);
  const deadline = Date.now() + timeoutMs;
  let state = 'missing';
  while (Date.now() < deadline) {
    const job = await queue.getJob(jobId);
    if (job) {
      state = await job.getState();
      if (state === 'completed' || state === 'failed') return (await queue.getJob(jobId))!;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`${kind} job ${jobId} did not finish within ${timeoutMs} ms (state: ${state})`);
}

/** Waits (bounded) until at least `count` jobs wait in the queue, e.g. while it is paused. */
export async function queued(queue: Queue, count: number, what = 'jobs to be queued'): Promise<void> {
  await eventually(async () => (await queue.getWaitingCount()) >= count, 20_000, what);
}

/** The thumbnail blobs stored for a file, whatever its version. */
export async function thumbnailBlobs(app: INestApplicationContext, file: Pick<FileEntity, 'id' | 'accountId'>): Promise<string[]> {
  const keys: string[] = [];
  for await (const entry of app.get(BlobStorage).list(blobKeys.thumbnailPrefix(file.accountId, file.id))) keys.push(entry.key);
  return keys;
}

export interface Clamd {
  host: string;
  port: number;
  socket: string;
  stop(): Promise<void>;
}

const CLAMD_BINARIES = ['/usr/sbin/clamd', '/usr/bin/clamd', '/usr/local/sbin/clamd'];

/**
 * A real clamd (Debian's clamav-daemon) on 127.0.0.1:<port> and a UNIX socket in a temp dir, with a
 * one-signature database that detects the EICAR test file, since no signatures can be downloaded here.
 * StreamMaxLength is 1 MiB so the size limit can be tested with a small file; `extraConfig` adds clamd.conf lines. Fails loudly when clamd
 * is missing or will not start: a scan test must never pass by skipping.
 */
export async function startClamd(port?: number, extraConfig: string[] = []): Promise<Clamd> {
  const binary = CLAMD_BINARIES.find((path) => existsSync(path));
  if (!binary) throw new Error('clamd is not installed; the media tests need it (Debian: apt-get install -y clamav-daemon)');
  const listenPort = port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'fss-clamd-'));
  mkdirSync(join(dir, 'db'));
  const eicarMarker = Buffer.from('EICAR-STANDARD-ANTIVIRUS-TEST-FILE', 'ascii').toString('hex');
  writeFileSync(join(dir, 'db', 'eicar.ndb'), `Eicar-Test-Signature:0:*:${eicarMarker}\n`);
  const socket = join(dir, 'clamd.sock');
  writeFileSync(
    join(dir, 'clamd.conf'),
    [
      'Foreground yes',
      `TCPSocket ${listenPort}`,
      'TCPAddr 127.0.0.1',
      `LocalSocket ${socket}`,
      `DatabaseDirectory ${join(dir, 'db')}`,
      'StreamMaxLength 1M',
      'MaxThreads 4',
      'SelfCheck 0',
      ...extraConfig,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(binary, ['-c', join(dir, 'clamd.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (data: Buffer) => (stderr = (stderr + data.toString()).slice(-4000)));
  let exited: number | null = null;
  child.once('exit', (code) => (exited = code ?? -1));
  const stop = async () => {
    if (exited === null) {
      child.kill('SIGTERM');
      await new Promise((resolve) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve(undefined);
        }, 3000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve(undefined);
        });
      });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (exited !== null) {
      await stop();
      throw new Error(`clamd exited (${exited}) during start-up: ${stderr.trim().split('\n').slice(-5).join(' | ')}`);
    }
    if (await pings(listenPort)) return { host: '127.0.0.1', port: listenPort, socket, stop };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await stop();
  throw new Error(`clamd did not answer PING on 127.0.0.1:${listenPort} within 30 s: ${stderr.slice(-500)}`);
}

function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let answer = '';
    const finish = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => finish(false));
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('zPING\0'));
    socket.on('data', (data) => {
      answer += data.toString();
      if (answer.includes('PONG')) finish(true);
    });
  });
}
