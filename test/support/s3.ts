import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { startTestAppHolding, type TestApp } from './test-app.js';

const BUCKET = 'fss-test';

export interface TestS3 {
  port: number;
  /** The STORAGE_DRIVER=s3 settings for an application using this server (through `endpointPort`, e.g. a proxy, if given). */
  env(endpointPort?: number): Record<string, string>;
  /** The keys of the bucket's multipart uploads neither completed nor aborted: parts S3 keeps (and bills) until one is. */
  unfinishedMultipartUploads(): string[];
  close(): Promise<void>;
}

/** A real S3-compatible server (s3rver, in this process, on a free port) with one bucket. */
export async function startS3(): Promise<TestS3> {
  const dir = mkdtempSync(join(tmpdir(), 'fss-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: BUCKET }] });
  // Where s3rver keeps the parts of a multipart upload until it is completed: one directory per upload id.
  const uploadsDir = join(dir, BUCKET, '._S3rver_uploads');
  abortsMultipartUploads(server, uploadsDir);
  const { port } = await server.run();
  return {
    port,
    env: (endpointPort = port) => ({
      STORAGE_DRIVER: 's3',
      S3_ENDPOINT: `http://127.0.0.1:${endpointPort}`,
      S3_BUCKET: BUCKET,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: 'true',
    }),
    unfinishedMultipartUploads: () =>
      existsSync(uploadsDir) ? readdirSync(uploadsDir).map((uploadId) => readFileSync(join(uploadsDir, uploadId, 'key'), 'utf8')) : [],
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * s3rver answers AbortMultipartUpload 405 and keeps the parts for good, and ListMultipartUploads 501, where S3, MinIO
 * and Ceph do both: this gives it the real calls (`DELETE /bucket/key?uploadId=...`, 204, or 404 NoSuchUpload;
 * `GET /bucket?uploads&prefix=...`, one page), so tests see what a bucket keeps.
 */
function abortsMultipartUploads(server: S3rver, uploadsDir: string): void {
  const koa = server as unknown as { middleware: Array<(ctx: any, next: () => Promise<void>) => Promise<void>> };
  koa.middleware.unshift(async (ctx, next) => {
    if (ctx.method === 'GET' && ctx.path.replace(/\/$/, '') === `/${BUCKET}` && 'uploads' in ctx.query) {
      const prefix = typeof ctx.query.prefix === 'string' ? ctx.query.prefix : '';
      const uploads = (existsSync(uploadsDir) ? readdirSync(uploadsDir) : [])
        .map((uploadId) => ({ uploadId, key: readFileSync(join(uploadsDir, uploadId, 'key'), 'utf8'), initiated: statSync(join(uploadsDir, uploadId)).birthtime }))
        .filter((upload) => upload.key.startsWith(prefix));
      ctx.type = 'application/xml';
      ctx.body =
        `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
        `<Bucket>${BUCKET}</Bucket><Prefix>${escapeXml(prefix)}</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>false</IsTruncated>` +
        uploads.map((u) => `<Upload><Key>${escapeXml(u.key)}</Key><UploadId>${u.uploadId}</UploadId><Initiated>${u.initiated.toISOString()}</Initiated></Upload>`).join('') +
        `</ListMultipartUploadsResult>`;
      return;
    }
    const uploadId = ctx.method === 'DELETE' ? ctx.query.uploadId : undefined;
    if (typeof uploadId !== 'string') return next();
    const upload = join(uploadsDir, uploadId.replace(/[^0-9a-f]/g, ''));
    if (!existsSync(upload)) {
      ctx.status = 404;
      ctx.type = 'application/xml';
      ctx.body = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>';
      return;
    }
    rmSync(upload, { recursive: true, force: true });
    ctx.status = 204;
  });
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A test application storing in a bucket of its own (startS3), closed with it: `useTestApp(assign, { start: startTestAppOnS3 })`. */
export async function startTestAppOnS3(overrides: Record<string, string> = {}): Promise<TestApp> {
  const s3 = await startS3();
  return startTestAppHolding({ ...s3.env(), ...overrides }, () => s3.close());
}
