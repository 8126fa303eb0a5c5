import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

export interface TestS3 {
  port: number;
  /** The STORAGE_DRIVER=s3 settings for an application using this server (through `endpointPort`, e.g. a proxy, if given). */
  env(endpointPort?: number): Record<string, string>;
  close(): Promise<void>;
}

/** A real S3-compatible server (s3rver, in this process, on a free port) with one bucket. */
export async function startS3(): Promise<TestS3> {
  const dir = mkdtempSync(join(tmpdir(), 'fss-s3rver-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: 'fss-test' }] });
  const { port } = await server.run();
  return {
    port,
    env: (endpointPort = port) => ({
      STORAGE_DRIVER: 's3',
      S3_ENDPOINT: `http://127.0.0.1:${endpointPort}`,
      S3_BUCKET: 'fss-test',
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: 'S3RVER',
      S3_SECRET_ACCESS_KEY: 'S3RVER',
      S3_FORCE_PATH_STYLE: 'true',
    }),
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
