import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { seedFile, storageOf } from '../../support/files.js';
import { runNode } from '../../support/processes.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

/**
 * Share and webhook creation, uploads, folders, renames and deletions, 50 at a time, while command-line
 * processes create accounts and keys in the same database. A busy database may make a request wait, or
 * answer 503 with Retry-After; it never answers 500, and the storage counters stay exact.
 */
describe('writes under concurrent load, with the CLI writing to the same database', () => {
  let t: TestApp;
  let owners: TestAccount[];

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMITS_ENABLED: 'false' });
    owners = await Promise.all([createAccount(t.app), createAccount(t.app), createAccount(t.app)]);
  });
  afterAll(() => t.close());

  it('answers every request 2xx or 503 with Retry-After, never 500', async () => {
    const files = await Promise.all(owners.flatMap((owner) => Array.from({ length: 4 }, () => seedFile(t.app, owner))));
    const fileOwner = (i: number) => owners[Math.floor(i / 4)];

    const cli = (async () => {
      const results = [];
      for (let round = 0; round < 3; round++) {
        const created = await Promise.all([
          runNode('cli.js', ['accounts', 'create', '--name', `cli ${round}`, '--plan', 'free'], t.environment.env, 120_000),
          runNode('cli.js', ['keys', 'create', '--account', owners[round].accountId, '--scopes', 'read,write'], t.environment.env, 120_000),
        ]);
        results.push(...created);
      }
      return results;
    })();

    const operations: Array<() => Promise<{ status: number; headers: Record<string, string>; text: string; what: string }>> = [];
    const call = (what: string, req: { then: PromiseLike<{ status: number; headers: Record<string, string>; text: string }>['then'] }) =>
      Promise.resolve(req).then((res) => ({ status: res.status, headers: res.headers, text: res.text, what }));
    for (let i = 0; i < 150; i++) {
      const owner = owners[i % owners.length];
      const file = files[i % files.length];
      const kind = i % 6;
      operations.push(() => {
        switch (kind) {
          case 0:
            return call('POST /v1/shares', t.http().post('/v1/shares').set(fileOwner(i % files.length).auth).send({ file_id: file.id, expires_in: 3600 }));
          case 1:
            return call('POST /v1/webhooks', t.http().post('/v1/webhooks').set(owner.auth).send({ url: 'http://127.0.0.1:9/hook', events: ['file.uploaded'] }));
          case 2:
            return call('POST /v1/files/upload', t.http().post('/v1/files/upload').set(owner.auth).attach('file', Buffer.from(`content ${i}\n`), `load-${i}.txt`));
          case 3:
            return call('POST /v1/folders', t.http().post('/v1/folders').set(owner.auth).send({ name: `folder ${i}` }));
          case 4:
            return call('PATCH /v1/files/{id}', t.http().patch(`/v1/files/${file.id}`).set(fileOwner(i % files.length).auth).send({ name: `renamed ${i}.txt` }));
          default:
            return call('POST /v1/api-keys', t.http().post('/v1/api-keys').set(owner.auth).send({ name: `key ${i}`, scopes: ['read'] }));
        }
      });
    }
    // 50 in flight at any time.
    const answers: Array<{ status: number; headers: Record<string, string>; text: string; what: string }> = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < operations.length) answers.push(await operations[next++]());
      }),
    );
    const cliResults = await cli;

    const failures = answers.filter((a) => a.status >= 500 && !(a.status === 503 && a.headers['retry-after']));
    expect(failures.map((a) => `${a.what} -> ${a.status} ${a.text.slice(0, 200)}`)).toEqual([]);
    expect(answers.filter((a) => a.status >= 400 && a.status < 500).map((a) => `${a.what} -> ${a.status} ${a.text.slice(0, 200)}`)).toEqual([]);
    expect(answers.filter((a) => a.status < 300).length).toBeGreaterThan(0);
    for (const result of cliResults) expect(result.code, result.stderr).toBe(0);
    for (const owner of owners) {
      const storage = await storageOf(t.app, owner.accountId);
      expect(storage.used).toBe(storage.sumOfFiles);
      expect(storage.reserved).toBe(0);
    }
  }, 300_000);
});
