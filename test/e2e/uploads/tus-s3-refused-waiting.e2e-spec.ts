import { readdirSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import { startTestAppOnS3 } from '../../support/s3.js';
import type { TestApp } from '../../support/test-app.js';
import { eventually, sleep } from '../../support/time.js';

const MiB = 1024 * 1024;

/**
 * A server stages at most 8 parts for S3 at once; a PATCH finds the others' parts in the way and waits for its turn. A
 * PATCH refused while it waits must give its turn back and stage nothing once it comes, or each such refusal leaves a
 * file behind and one of the 8 turns taken for good (after 8, every PATCH on S3 would wait for ever).
 */
describe('a resumable upload on S3 refused while its PATCH waits for its turn to stage a part', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started), { start: startTestAppOnS3 });
  const stagedFiles = () =>
    readdirSync(tmpdir())
      .filter((name) => name.startsWith(`fss-tus-s3-parts-${process.pid}-`))
      .flatMap((dir) => readdirSync(join(tmpdir(), dir)));
  const tus = () => ({ ...owner.auth, 'Tus-Resumable': '1.0.0' });
  const createUpload = async (length: number) => {
    const created = await fetch(`${t.baseUrl}/v1/uploads`, {
      method: 'POST',
      headers: { ...tus(), 'Upload-Length': String(length), 'Upload-Metadata': `filename ${Buffer.from('w.bin').toString('base64')}` },
    });
    expect(created.status).toBe(201);
    return new URL(created.headers.get('location')!, t.baseUrl);
  };
  const openPatch = (url: URL, headers: Record<string, string>, onAnswer: (status: number) => void = () => {}): ClientRequest => {
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method: 'PATCH', headers: { ...tus(), 'Upload-Offset': '0', 'Content-Type': 'application/offset+octet-stream', ...headers } });
    req.on('response', (res) => {
      res.resume();
      onAnswer(res.statusCode ?? 0);
    });
    req.on('error', () => undefined);
    return req;
  };


  it('leaves no staged file and takes no turn for good', async () => {
    // Eight PATCHes each staging their first part, and holding: every turn is taken.
    const holders: ClientRequest[] = [];
    const answered: number[] = [];
    for (let i = 0; i < 8; i++) {
      const req = openPatch(await createUpload(9 * MiB), { 'Content-Length': String(9 * MiB) }, (status) => answered.push(status));
      req.write(Buffer.alloc(MiB, i));
      holders.push(req);
    }
    await eventually(async () => stagedFiles().length === 8, 20_000, 'eight parts to be staged');

    // A chunked PATCH to a 10-byte upload: its first bytes wait for a turn, then it runs past the length and is refused.
    let refused = 0;
    const hostile = openPatch(await createUpload(10), { 'Transfer-Encoding': 'chunked' }, (status) => (refused = status));
    hostile.write(Buffer.alloc(5, 1));
    await sleep(500);
    hostile.end(Buffer.alloc(100, 1));
    await eventually(async () => refused !== 0, 20_000, 'the hostile PATCH to be answered');
    expect(refused).toBe(413);

    // The eight finish: then no part is staged any more (the refused PATCH staged none when its turn came).
    for (const req of holders) req.end(Buffer.alloc(8 * MiB, 2));
    await eventually(async () => answered.length === 8, 60_000, 'the eight PATCHes to be answered');
    expect(answered).toEqual(Array(8).fill(204));
    await eventually(async () => stagedFiles().length === 0, 10_000, 'no part to be staged any more');
  }, 120_000);
});
