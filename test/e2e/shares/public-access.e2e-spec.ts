import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { Clock } from '../../../src/common/clock.js';
import { PASSWORD_CHECK_DEADLINE_MS } from '../../../src/modules/shares/password-attempts.js';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { seedFile } from '../../support/files.js';
import { startTestApp, TEST_REDIS_URL, type TestApp } from '../../support/test-app.js';
import { downloadDuringHeldOverwrite, uploadOk } from '../../support/uploads.js';
import { createShare, expireShare, fileLifecycle, outboxEvents, shareRow, slowDownPasswordCheck } from './share-fixtures.js';

const CONTENT = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz'.repeat(100));
const MD5 = createHash('md5').update(CONTENT).digest('hex');

describe('public share links (/s/{token})', () => {
  let t: TestApp;
  let owner: TestAccount;

  beforeAll(async () => {
    // Many public requests from one address: lift the per-IP request limit, which has its own tests.
    t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '100000' });
    owner = await createAccount(t.app);
  });
  afterAll(() => t.close());

  async function sharedFile(body: Record<string, unknown> = {}, name?: string) {
    const file = await seedFile(t.app, owner, { name, content: CONTENT, mimeType: 'text/plain' });
    return { file, share: await createShare(t, owner, { file_id: file.id, ...body }) };
  }

  it('answers the public metadata without an API key', async () => {
    const { share } = await sharedFile({ expires_in: 3600 }, 'Quarterly report.txt');
    const res = await t.http().get(share.path);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.headers.vary).toMatch(/Accept/);
    // Every open counts a view and a revoked link must stop answering: no cache may keep the answer.
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      success: true,
      data: {
        file: { name: 'Quarterly report.txt', size: CONTENT.length, type: 'text/plain' },
        expires_at: share.expires_at,
        password_protected: false,
        download_url: `${share.url}/download`,
      },
    });
  });

  it('serves the new bytes, not a 500, to a share download that arrives while an overwrite moves them into place', async () => {
    const original = await uploadOk(t, owner.auth, 'first version', { name: 'shared-while-overwritten.txt' });
    const share = await createShare(t, owner, { file_id: original.id });
    const res = await downloadDuringHeldOverwrite(t, owner.auth, 'shared-while-overwritten.txt', 'second version', `${t.baseUrl}${share.path}/download`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('second version');
  });

  it('shares a file uploaded through the API: metadata, download, and a dead link once the file is trashed', async () => {
    const uploaded = await uploadOk(t, owner.auth, CONTENT, { name: 'through the API.txt' });
    const share = await createShare(t, owner, { file_id: uploaded.id });
    const meta = await t.http().get(share.path).expect(200);
    expect(meta.body.data.file).toEqual({ name: 'through the API.txt', size: CONTENT.length, type: 'text/plain' });
    const full = await t.http().get(`${share.path}/download`).buffer(true).parse(binary);
    expect(full.status).toBe(200);
    expect(Buffer.compare(full.body, CONTENT)).toBe(0);
    expect(full.headers.etag).toBe(`"${MD5}"`);
    await fileLifecycle.moveToTrash(t, owner, uploaded.id);
    await t.http().get(share.path).expect(404);
  });

  it('guards a link to an uploaded file with its password, counts its accesses with share.accessed, and answers 410 once it expired', async () => {
    const account = await createAccount(t.app);
    const uploaded = await uploadOk(t, account.auth, CONTENT, { name: 'uploaded secret.txt' });
    const share = await createShare(t, account, { file_id: uploaded.id, password: 'open sesame', expires_in: 3600 });
    expect((await t.http().get(share.path)).body.error.code).toBe('password_required');
    await t.http().get(`${share.path}/download`).set('X-Share-Password', 'wrong').expect(401);
    const view = await t.http().get(share.path).set('X-Share-Password', 'open sesame').set('User-Agent', 'Viewer/1.0').expect(200);
    expect(view.body.data).toMatchObject({ file: { name: 'uploaded secret.txt', size: CONTENT.length, type: 'text/plain' }, password_protected: true, expires_at: share.expires_at });
    const download = await t.http().get(`${share.path}/download`).set('X-Share-Password', 'open sesame').set('User-Agent', 'Fetcher/2.0').buffer(true).parse(binary);
    expect(download.status).toBe(200);
    expect(Buffer.compare(download.body, CONTENT)).toBe(0);

    const listed = await t.http().get(`/v1/shares?file_id=${uploaded.id}`).set(account.auth).expect(200);
    expect(listed.body.data[0]).toMatchObject({ id: share.id, access_count: 2, active: true });
    const events = await outboxEvents(t.app, account, 'share.accessed');
    expect(events.map((e) => e.data)).toEqual([
      { share: { id: share.id, file_id: uploaded.id }, access: { ip_address: '127.0.0.1', user_agent: 'Viewer/1.0', location: null, action: 'view' } },
      { share: { id: share.id, file_id: uploaded.id }, access: { ip_address: '127.0.0.1', user_agent: 'Fetcher/2.0', location: null, action: 'download' } },
    ]);

    await expireShare(t.app, share.id);
    const expired = await t.http().get(`${share.path}/download`).set('X-Share-Password', 'open sesame');
    expect(expired.status).toBe(410);
    expect(expired.body.error.code).toBe('share_expired');
  });

  it('answers 404 once an uploaded file is deleted permanently, keeping the link\'s analytics', async () => {
    const uploaded = await uploadOk(t, owner.auth, CONTENT, { name: 'to be purged.txt' });
    const share = await createShare(t, owner, { file_id: uploaded.id });
    await t.http().get(`${share.path}/download`).expect(200);
    await fileLifecycle.deletePermanently(t, owner, uploaded.id);
    await t.http().get(share.path).expect(404);
    await t.http().get(`${share.path}/download`).expect(404);
    const listed = await t.http().get(`/v1/shares?file_id=${uploaded.id}`).set(owner.auth).expect(200);
    expect(listed.body.data[0]).toMatchObject({ id: share.id, access_count: 1, active: false });
  });

  it('streams the file with ETag, Content-Disposition and byte ranges', async () => {
    const { share } = await sharedFile({}, 'données.txt');
    const full = await t.http().get(`${share.path}/download`).buffer(true).parse(binary);
    expect(full.status).toBe(200);
    expect(Buffer.compare(full.body, CONTENT)).toBe(0);
    expect(full.headers.etag).toBe(`"${MD5}"`);
    expect(full.headers['accept-ranges']).toBe('bytes');
    expect(full.headers['content-disposition']).toBe(`attachment; filename="donn_es.txt"; filename*=UTF-8''donn%C3%A9es.txt`);
    expect(full.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
    expect(full.headers['x-content-type-options']).toBe('nosniff');

    const part = await t.http().get(`${share.path}/download`).set('Range', 'bytes=10-19').buffer(true).parse(binary);
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 10-19/${CONTENT.length}`);
    expect(part.body.toString()).toBe(CONTENT.subarray(10, 20).toString());

    const suffix = await t.http().get(`${share.path}/download`).set('Range', 'bytes=-5').buffer(true).parse(binary);
    expect(suffix.status).toBe(206);
    expect(suffix.body.toString()).toBe(CONTENT.subarray(-5).toString());

    const unsatisfiable = await t.http().get(`${share.path}/download`).set('Range', `bytes=${CONTENT.length}-`);
    expect(unsatisfiable.status).toBe(416);
    expect(unsatisfiable.headers['content-range']).toBe(`bytes */${CONTENT.length}`);

    const notModified = await t.http().get(`${share.path}/download`).set('If-None-Match', `"${MD5}"`);
    expect(notModified.status).toBe(304);
  });

  it('answers If-Modified-Since as curl -z and wget -N send it: 304 while the file is unchanged, counted like an If-None-Match 304', async () => {
    const { share } = await sharedFile();
    const download = `${share.path}/download`;
    const lastModified = (await t.http().get(download).expect(200)).headers['last-modified'];

    const res = await t.http().get(download).set('If-Modified-Since', lastModified);
    expect(res.status).toBe(304);
    expect(res.headers.etag).toBe(`"${MD5}"`);
    // Answered before the range is looked at, as If-None-Match is.
    await t.http().get(download).set('If-Modified-Since', lastModified).set('Range', `bytes=${CONTENT.length}-`).expect(304);
    // The file changed after the date, the date is not one, or it is in the future: the whole file.
    const earlier = new Date(Date.parse(lastModified) - 1000).toUTCString();
    for (const since of [earlier, 'yesterday', new Date(Date.now() + 86_400_000).toUTCString()]) {
      expect((await t.http().get(download).set('If-Modified-Since', since)).status, since).toBe(200);
    }
    // If-None-Match decides when both are sent (RFC 9110 13.1.3).
    await t.http().get(download).set('If-Modified-Since', lastModified).set('If-None-Match', '"another-version"').expect(200);
    expect(Number((await shareRow(t.app, share.id)).access_count)).toBe(7);
  });

  it('answers 404 for unknown and malformed tokens', async () => {
    for (const path of ['/s/' + 'A'.repeat(43), '/s/short', '/s/' + 'A'.repeat(43) + '/download', '/s/%2e%2e']) {
      const res = await t.http().get(path);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('keeps every answer of a link out of search engines, the file above all: X-Robots-Tag noindex', async () => {
    const { share } = await sharedFile();
    const { share: locked } = await sharedFile({ password: 'kept out' });
    const answers = {
      json: await t.http().get(share.path).expect(200),
      page: await t.http().get(share.path).set('Accept', 'text/html').expect(200),
      download: await t.http().get(`${share.path}/download`).expect(200),
      head: await t.http().head(`${share.path}/download`).expect(200),
      refused: await t.http().get(`${locked.path}/download`).expect(401),
      unknown: await t.http().get('/s/' + 'A'.repeat(43)).expect(404),
    };
    for (const [what, res] of Object.entries(answers)) expect(res.headers['x-robots-tag'], what).toBe('noindex, nofollow');
  });

  describe('with a password', () => {
    it('answers 401 password_required for a missing and a wrong password alike', async () => {
      const { share } = await sharedFile({ password: 'open sesame' });
      const missing = await t.http().get(share.path);
      const wrong = await t.http().get(share.path).set('X-Share-Password', 'open sesame!');
      const missingDownload = await t.http().get(`${share.path}/download`);
      const wrongDownload = await t.http().get(`${share.path}/download`).set('X-Share-Password', 'Open sesame');
      for (const res of [missing, wrong, missingDownload, wrongDownload]) {
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ success: false, error: { code: 'password_required', message: missing.body.error.message } });
      }
    });

    it('opens and downloads with the right password in X-Share-Password', async () => {
      const { share } = await sharedFile({ password: 'open sesame' });
      const view = await t.http().get(share.path).set('X-Share-Password', 'open sesame').expect(200);
      expect(view.body.data.password_protected).toBe(true);
      const download = await t.http().get(`${share.path}/download`).set('X-Share-Password', 'open sesame').buffer(true).parse(binary);
      expect(download.status).toBe(200);
      expect(Buffer.compare(download.body, CONTENT)).toBe(0);
    });

    it('accepts a non-ASCII password sent as UTF-8 bytes (curl) or as Latin-1', async () => {
      const { share } = await sharedFile({ password: 'pässwörd' });
      await t.http().get(share.path).set('X-Share-Password', Buffer.from('pässwörd', 'utf8').toString('latin1')).expect(200);
      await t.http().get(share.path).set('X-Share-Password', 'pässwörd').expect(200);
      await t.http().get(share.path).set('X-Share-Password', 'passwort').expect(401);
    });

    it('accepts a password holding U+FFFD (the replacement character) sent as UTF-8 bytes, as it was created', async () => {
      const { share } = await sharedFile({ password: 'broken \uFFFD glyph' });
      await t.http().get(share.path).set('X-Share-Password', Buffer.from('broken \uFFFD glyph', 'utf8').toString('latin1')).expect(200);
      // Bytes that are not UTF-8 are still read as Latin-1.
      const { share: latin } = await sharedFile({ password: 'caf\u00e9 \u00ff' });
      await t.http().get(latin.path).set('X-Share-Password', Buffer.from('caf\u00e9 \u00ff', 'latin1').toString('latin1')).expect(200);
    });

    it('refuses repeated X-Share-Password headers with 400, without counting them as wrong passwords', async () => {
      const { share } = await sharedFile({ password: 'open sesame' });
      for (let i = 0; i < 12; i++) {
        for (const path of [share.path, `${share.path}/download`]) {
          const res = await t.http().get(path).set('X-Share-Password', ['open sesame', 'open sesame'] as unknown as string); // two header lines
          expect(res.status, path).toBe(400);
          expect(res.body.error).toEqual({ code: 'invalid_request', message: 'Send one X-Share-Password header, not several.' });
        }
      }
      // 24 of them, and the visitor is not locked out: none was taken for a guess.
      await t.http().get(share.path).set('X-Share-Password', 'open sesame').expect(200);
    });

    it('takes the password from a form body on POST .../download, never from the URL', async () => {
      const { share } = await sharedFile({ password: 'open sesame' });
      const ok = await t.http().post(`${share.path}/download`).type('form').send({ password: 'open sesame' }).buffer(true).parse(binary);
      expect(ok.status).toBe(200);
      expect(Buffer.compare(ok.body, CONTENT)).toBe(0);
      const wrong = await t.http().post(`${share.path}/download`).type('form').send({ password: 'nope' });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error.code).toBe('password_required');
      const query = await t.http().get(`${share.path}/download?password=open%20sesame`);
      expect(query.status).toBe(401);
    });

    it('refuses a form body it would not read (multipart, text) with 415 naming the types it takes, instead of dropping the password', async () => {
      const { share } = await sharedFile({ password: 'open sesame' });
      const multipart = await t.http().post(`${share.path}/download`).field('password', 'open sesame');
      const text = await t.http().post(`${share.path}/download`).set('Content-Type', 'text/plain').send('password=open sesame');
      for (const res of [multipart, text]) {
        expect(res.status).toBe(415);
        expect(res.body.error).toEqual({
          code: 'invalid_request',
          message: expect.stringMatching(/^This route reads an application\/x-www-form-urlencoded or JSON body, .*; send it with Content-Type: application\/x-www-form-urlencoded or application\/json\.$/),
          details: { supported: ['application/x-www-form-urlencoded', 'application/json'] },
        });
      }
      expect(Number((await shareRow(t.app, share.id)).access_count)).toBe(0);
    });

    it('answers ranges, If-Range and If-None-Match on the form route as on GET, as its OpenAPI entry says', async () => {
      const { share } = await sharedFile({ password: 'open sesame' });
      const form = () => t.http().post(`${share.path}/download`).type('form').send({ password: 'open sesame' });
      const part = await form().set('Range', 'bytes=10-19').buffer(true).parse(binary);
      expect(part.status).toBe(206);
      expect(part.headers['content-range']).toBe(`bytes 10-19/${CONTENT.length}`);
      expect(Buffer.compare(part.body, CONTENT.subarray(10, 20))).toBe(0);
      // If-Range: the range while the file is the version the client holds, the whole file once it is not.
      expect((await form().set('Range', 'bytes=10-19').set('If-Range', `"${MD5}"`).buffer(true).parse(binary)).status).toBe(206);
      const changed = await form().set('Range', 'bytes=10-19').set('If-Range', '"an older version"').buffer(true).parse(binary);
      expect(changed.status).toBe(200);
      expect(Buffer.compare(changed.body, CONTENT)).toBe(0);
      const pastTheEnd = await form().set('Range', `bytes=${CONTENT.length}-`);
      expect(pastTheEnd.status).toBe(416);
      expect(pastTheEnd.headers['content-range']).toBe(`bytes */${CONTENT.length}`);
      await form().set('If-None-Match', `"${MD5}"`).expect(304);
    });

    it('lets a download manager fetch 12 ranges at once with the right password: checks still in flight do not lock it out', async () => {
      const { share } = await sharedFile({ password: 'right one' });
      // Checks that take a while, so all twelve are in flight together, as on a busy server.
      await slowDownPasswordCheck(t.app, share.id, 'right one', 2);
      const parts = await Promise.all(
        Array.from({ length: 12 }, (_, i) => t.http().get(`${share.path}/download`).set('X-Share-Password', 'right one').set('Range', `bytes=${i * 100}-${i * 100 + 99}`)),
      );
      for (const [i, part] of parts.entries()) {
        // Those beyond the ten wait for the checks in flight; on a very busy machine one may be told to come back in seconds, never in 15 minutes.
        if (part.status === 429) {
          expect(Number(part.headers['retry-after']), `range ${i}: Retry-After`).toBeLessThanOrEqual(PASSWORD_CHECK_DEADLINE_MS / 1000);
          continue;
        }
        expect(part.status, `range ${i}`).toBe(206);
        expect(part.text).toBe(CONTENT.subarray(i * 100, i * 100 + 100).toString());
      }
      expect(parts.filter((part) => part.status === 206).length).toBeGreaterThanOrEqual(11);
      // None of them counts against the visitor: nine typos still leave the right password working.
      for (let i = 0; i < 9; i++) await t.http().get(share.path).set('X-Share-Password', `typo ${i}`).expect(401);
      await t.http().get(share.path).set('X-Share-Password', 'right one').expect(200);
    });

    it('locks a client out after 10 wrong passwords, even with the right one, and leaves other links alone', async () => {
      const { share } = await sharedFile({ password: 'correct password' });
      const { share: otherShare } = await sharedFile({ password: 'correct password' });
      for (let i = 1; i <= 10; i++) {
        const res = await t.http().get(share.path).set('X-Share-Password', `guess ${i}`);
        expect(res.status, `guess ${i}`).toBe(401);
      }
      for (const attempt of ['guess 11', 'correct password']) {
        const res = await t.http().get(`${share.path}/download`).set('X-Share-Password', attempt);
        expect(res.status, attempt).toBe(429);
        expect(res.body.error.code).toBe('rate_limit_exceeded');
        const retryAfter = Number(res.headers['retry-after']);
        expect(retryAfter).toBeGreaterThan(14 * 60);
        expect(retryAfter).toBeLessThanOrEqual(15 * 60);
      }
      // The lockout is per link (and per client): the other link still opens with its password.
      await t.http().get(otherShare.path).set('X-Share-Password', 'correct password').expect(200);
      // Nothing was counted for the locked-out link.
      expect(Number((await shareRow(t.app, share.id)).access_count)).toBe(0);
      // The counter lives in Redis under the app's prefix, with the 15-minute window.
      const redis = new Redis(TEST_REDIS_URL);
      try {
        const key = `${t.config.redisKeyPrefix}:share-password-failures:${share.id}:${'127.0.0.1'}`;
        const ttl = await redis.pttl(key);
        expect(await redis.get(key)).toBe('10');
        expect(ttl).toBeGreaterThan(14 * 60_000);
        // When the window has passed, the right password works again.
        await redis.del(key);
      } finally {
        redis.disconnect();
      }
      await t.http().get(share.path).set('X-Share-Password', 'correct password').expect(200);
    });

    it('cannot be outpaced by parallel guesses: at most 10 are checked', async () => {
      const { share } = await sharedFile({ password: 'right one' });
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => t.http().get(share.path).set('X-Share-Password', `parallel ${i}`)));
      const statuses = answers.map((res) => res.status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(10);
      expect(statuses.filter((s) => s === 429)).toHaveLength(20);
      await t.http().get(share.path).set('X-Share-Password', 'right one').expect(429);
    });

    it('never locks out a visitor who keeps using the right password', async () => {
      const { share } = await sharedFile({ password: 'right one' });
      for (let i = 0; i < 9; i++) await t.http().get(share.path).set('X-Share-Password', `typo ${i}`).expect(401);
      // Without giving right answers' attempts back, the second of these would already be refused.
      for (let i = 0; i < 2; i++) await t.http().get(share.path).set('X-Share-Password', 'right one').expect(200);
      // The nine typos still count: one more wrong password locks the visitor out.
      await t.http().get(share.path).set('X-Share-Password', 'typo 10').expect(401);
      await t.http().get(share.path).set('X-Share-Password', 'right one').expect(429);
    });

    it('does not count a missing password as a wrong guess', async () => {
      const { share } = await sharedFile({ password: 'pw' });
      for (let i = 0; i < 12; i++) await t.http().get(share.path).expect(401);
      await t.http().get(share.path).set('X-Share-Password', 'pw').expect(200);
    });
  });

  it('answers 410 share_expired after expires_at (checked before any password)', async () => {
    const { share } = await sharedFile({ expires_in: 60 });
    const { share: protectedShare } = await sharedFile({ expires_in: 60, password: 'pw' });
    await t.http().get(share.path).expect(200);
    await expireShare(t.app, share.id);
    await expireShare(t.app, protectedShare.id);
    for (const [path, password] of [
      [share.path, undefined],
      [`${share.path}/download`, undefined],
      [protectedShare.path, 'pw'],
      [protectedShare.path, undefined],
    ] as const) {
      const request = t.http().get(path);
      if (password) request.set('X-Share-Password', password);
      const res = await request;
      expect(res.status, path).toBe(410);
      expect(res.body.error.code).toBe('share_expired');
    }
    const listed = await t.http().get(`/v1/shares?file_id=${share.file_id}`).set(owner.auth).expect(200);
    expect(listed.body.data[0]).toMatchObject({ active: false, revoked_at: null, invalidated_at: null });
  });

  describe('invalidation when the file leaves the active state', () => {
    it('answers 404 at once when the file goes to trash, and restoring does not revive the link', async () => {
      const { file, share } = await sharedFile();
      await t.http().get(share.path).expect(200);
      await fileLifecycle.moveToTrash(t, owner, file.id);
      await t.http().get(share.path).expect(404);
      await t.http().get(`${share.path}/download`).expect(404);
      await fileLifecycle.restore(t, owner, file.id);
      const after = await t.http().get(share.path);
      expect(after.status).toBe(404);
      expect(after.body.error.code).toBe('not_found');
      await t.http().get(`${share.path}/download`).expect(404);
      // The analytics stay, and the listing says why the link is dead.
      const listed = await t.http().get(`/v1/shares?file_id=${file.id}`).set(owner.auth).expect(200);
      expect(listed.body.data[0]).toMatchObject({ id: share.id, access_count: 1, active: false, invalidated_at: expect.any(String), revoked_at: null });
      // A new link to the restored file works.
      const fresh = await createShare(t, owner, { file_id: file.id });
      await t.http().get(fresh.path).expect(200);
    });

    it('answers 404 when the file was deleted permanently, keeping the link\'s analytics', async () => {
      const { file, share } = await sharedFile();
      await t.http().get(`${share.path}/download`).expect(200);
      await fileLifecycle.deletePermanently(t, owner, file.id);
      await t.http().get(share.path).expect(404);
      await t.http().get(`${share.path}/download`).expect(404);
      const listed = await t.http().get(`/v1/shares?file_id=${file.id}`).set(owner.auth).expect(200);
      expect(listed.body.data[0]).toMatchObject({ id: share.id, access_count: 1, active: false });
    });

    it('refuses a link whose file is gone or not active even before its links are marked', async () => {
      const trashed = await sharedFile();
      await fileLifecycle.setState(t.app, trashed.file.id, 'trashed');
      await t.http().get(trashed.share.path).expect(404);
      const deleted = await sharedFile();
      await fileLifecycle.removeRowOnly(t.app, deleted.file.id);
      await t.http().get(deleted.share.path).expect(404);
      await t.http().get(`${deleted.share.path}/download`).expect(404);
    });

    it('refuses to download an infected file (403 file_infected)', async () => {
      const { file, share } = await sharedFile();
      await fileLifecycle.setState(t.app, file.id, 'active', 'infected');
      const res = await t.http().get(`${share.path}/download`);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('file_infected');
    });
  });

  describe('the HTML answers for browsers (Accept: text/html)', () => {
    const html = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

    it('serves the page with a strict CSP, and pages for refusals with the same status codes', async () => {
      const { share } = await sharedFile({}, '<b>bold</b>.txt');
      const page = await t.http().get(share.path).set('Accept', html);
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html; charset=utf-8/);
      expect(page.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'$/);
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.headers['x-frame-options']).toBe('DENY');
      expect(page.text).toContain('&lt;b&gt;bold&lt;/b&gt;.txt');
      expect(page.text).not.toContain('<b>bold</b>');
      expect(page.text).not.toMatch(/<script/i);
      expect(page.text).toContain(`href="${share.path}/download"`);

      const unknown = await t.http().get(`/s/${'z'.repeat(43)}`).set('Accept', html);
      expect(unknown.status).toBe(404);
      expect(unknown.headers['content-type']).toMatch(/^text\/html/);
      await t.http().delete(`/v1/shares/${share.id}`).set(owner.auth).expect(200);
      expect((await t.http().get(share.path).set('Accept', html)).status).toBe(404);
    });

    it('does not let a right-to-left override in the file name disguise it on the page: the control is shown, the download name kept', async () => {
      // Displayed as written, "invoice\u202Efdp.exe" reads "invoiceexe.pdf".
      const { share } = await sharedFile({}, 'invoice\u202efdp.exe');
      const page = await t.http().get(share.path).set('Accept', html).expect(200);
      expect(page.text).not.toContain('\u202e');
      expect(page.text).toContain('<title>invoice\ufffdfdp.exe</title>');
      expect(page.text).toContain('<h1>invoice\ufffdfdp.exe</h1>');
      // The JSON answer and the download keep the exact name.
      expect((await t.http().get(share.path).expect(200)).body.data.file.name).toBe('invoice\u202efdp.exe');
    });

    it('shows the password form without revealing the file, and a locked-out page after too many wrong passwords', async () => {
      const { share } = await sharedFile({ password: 'letmein' }, 'confidential-plan.txt');
      const form = await t.http().get(share.path).set('Accept', html);
      expect(form.status).toBe(200);
      expect(form.text).toContain(`<form method="post" action="${share.path}/download">`);
      expect(form.text).not.toContain('confidential-plan');
      // Showing the form is not an access.
      expect(Number((await shareRow(t.app, share.id)).access_count)).toBe(0);

      // Nine wrong passwords already (the counting itself is tested above), then the tenth through the form.
      const redis = new Redis(TEST_REDIS_URL);
      await redis.set(`${t.config.redisKeyPrefix}:share-password-failures:${share.id}:127.0.0.1`, 9, 'PX', 15 * 60_000).finally(() => redis.disconnect());
      const wrong = await t.http().post(`${share.path}/download`).set('Accept', html).type('form').send({ password: 'nope' });
      expect(wrong.status).toBe(401);
      expect(wrong.text).toContain('That password is not right');
      // That was the last one this visitor may try: no form to try another, but when to come back.
      expect(wrong.text).not.toContain('<form');
      expect(wrong.text).toMatch(/try again in 15 minutes, after \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
      const locked = await t.http().post(`${share.path}/download`).set('Accept', html).type('form').send({ password: 'letmein' });
      expect(locked.status).toBe(429);
      expect(locked.headers['retry-after']).toBeDefined();
      expect(locked.text).toContain('Too many attempts');
      expect(locked.text).not.toContain('<form');
    });

    it('tells a locked-out visitor opening the page when to come back, with the 429 and Retry-After a password would get, instead of a form', async () => {
      const { share } = await sharedFile({ password: 'letmein' });
      const clientKey = `${t.config.redisKeyPrefix}:share-password-failures:${share.id}:127.0.0.1`;
      const linkKey = `${t.config.redisKeyPrefix}:share-password-link:${share.id}`;
      const redis = new Redis(TEST_REDIS_URL);
      onTestFinished(() => {
        redis.disconnect();
      });
      const pageAndPassword = async () => [await t.http().get(share.path).set('Accept', html), await t.http().get(share.path).set('X-Share-Password', 'letmein')] as const;

      // This visitor has used its ten wrong passwords (the counting is tested above).
      await redis.set(clientKey, 10, 'PX', 15 * 60_000);
      let [page, password] = await pageAndPassword();
      expect([page.status, password.status]).toEqual([429, 429]);
      expect(Number(page.headers['retry-after'])).toBeGreaterThan(14 * 60);
      expect(Math.abs(Number(page.headers['retry-after']) - Number(password.headers['retry-after']))).toBeLessThanOrEqual(1);
      expect(page.headers['cache-control']).toBe('no-store');
      expect(page.text).toContain('Too many attempts');
      expect(page.text).toContain('from your network');
      expect(page.text).toMatch(/try again in 15 minutes, after \d{4}-\d\d-\d\d \d\d:\d\d UTC/);
      expect(page.text).not.toContain('<form');

      // The link backing off after wrong passwords from everyone: the same for every visitor.
      await redis.del(clientKey);
      await redis.multi().hset(linkKey, { attempts: 40, locked_until: Date.now() + 60 * 60_000 }).pexpire(linkKey, 2 * 60 * 60_000).exec();
      [page, password] = await pageAndPassword();
      expect([page.status, password.status]).toEqual([429, 429]);
      expect(Number(page.headers['retry-after'])).toBeGreaterThan(59 * 60);
      expect(Math.abs(Number(page.headers['retry-after']) - Number(password.headers['retry-after']))).toBeLessThanOrEqual(1);
      expect(page.text).toContain('too many wrong passwords');
      expect(page.text).toMatch(/try again in 1 hour, after /);
      expect(page.text).not.toContain('<form');

      // Once the back-off is over, the form is back.
      await redis.hdel(linkKey, 'locked_until');
      const form = await t.http().get(share.path).set('Accept', html).expect(200);
      expect(form.text).toContain('<form method="post"');
    });
  });

  describe('analytics', () => {
    it('counts every view and download and records share.accessed with the visitor', async () => {
      const account = await createAccount(t.app);
      const file = await seedFile(t.app, account, { content: CONTENT });
      const share = await createShare(t, account, { file_id: file.id, password: 'pw' });
      await t.http().get(share.path).set('X-Share-Password', 'pw').set('User-Agent', 'Viewer/1.0').expect(200);
      await t.http().get(`${share.path}/download`).set('X-Share-Password', 'pw').set('User-Agent', 'Fetcher/2.0').expect(200);
      // A client without a User-Agent is recorded with null.
      await t.http().get(`${share.path}/download`).set('X-Share-Password', 'pw').set('Range', 'bytes=0-0').expect(206);
      // Refusals and HEAD requests are not accesses.
      await t.http().get(share.path).set('X-Share-Password', 'wrong').expect(401);
      await t.http().head(`${share.path}/download`).set('X-Share-Password', 'pw').expect(200);

      const row = await shareRow(t.app, share.id);
      expect(Number(row.access_count)).toBe(3);
      const listed = await t.http().get('/v1/shares').set(account.auth).expect(200);
      expect(listed.body.data[0].access_count).toBe(3);
      expect(Date.parse(listed.body.data[0].last_accessed_at)).toBeGreaterThan(Date.now() - 60_000);

      const events = await outboxEvents(t.app, account, 'share.accessed');
      expect(events.map((e) => e.data)).toEqual([
        { share: { id: share.id, file_id: file.id }, access: { ip_address: '127.0.0.1', user_agent: 'Viewer/1.0', location: null, action: 'view' } },
        { share: { id: share.id, file_id: file.id }, access: { ip_address: '127.0.0.1', user_agent: 'Fetcher/2.0', location: null, action: 'download' } },
        { share: { id: share.id, file_id: file.id }, access: { ip_address: '127.0.0.1', user_agent: null, location: null, action: 'download' } },
      ]);
    });

    it('does not count a download refused for a range past the end of the file (416)', async () => {
      const account = await createAccount(t.app);
      const file = await seedFile(t.app, account, { content: '0123456789' });
      const open = await createShare(t, account, { file_id: file.id });
      const locked = await createShare(t, account, { file_id: file.id, password: 'pw' });
      for (const request of [
        t.http().get(`${open.path}/download`).set('Range', 'bytes=100-200'),
        t.http().get(`${locked.path}/download`).set('Range', 'bytes=100-200').set('X-Share-Password', 'pw'),
        t.http().get(`${locked.path}/download`).set('Range', 'bytes=10-').set('X-Share-Password', 'pw'),
      ]) {
        const refused = await request;
        expect(refused.status).toBe(416);
        expect(refused.body.error.code).toBe('invalid_request');
        expect(refused.headers['content-range']).toBe('bytes */10');
      }
      // Without the right password the answer is 401, which says nothing about the file's size.
      const wrong = await t.http().get(`${locked.path}/download`).set('Range', 'bytes=100-200').set('X-Share-Password', 'nope');
      expect(wrong.status).toBe(401);
      expect(wrong.headers['content-range']).toBeUndefined();
      for (const share of [open, locked]) {
        const row = await shareRow(t.app, share.id);
        expect(Number(row.access_count)).toBe(0);
        expect(row.last_accessed_at).toBeNull();
      }
      expect(await outboxEvents(t.app, account, 'share.accessed')).toEqual([]);

      // A range that fits, and a 304 (If-None-Match is answered before the range), still count.
      await t.http().get(`${open.path}/download`).set('Range', 'bytes=5-').expect(206);
      await t.http().get(`${open.path}/download`).set('Range', 'bytes=100-200').set('If-None-Match', `"${file.md5}"`).expect(304);
      expect(Number((await shareRow(t.app, open.id)).access_count)).toBe(2);
      expect((await outboxEvents(t.app, account, 'share.accessed')).map((e) => e.data.access)).toEqual([
        expect.objectContaining({ action: 'download' }),
        expect.objectContaining({ action: 'download' }),
      ]);
    });

    it('counts concurrent accesses exactly', async () => {
      const { share } = await sharedFile();
      await Promise.all(Array.from({ length: 20 }, () => t.http().get(share.path).expect(200)));
      expect(Number((await shareRow(t.app, share.id)).access_count)).toBe(20);
    });
  });
});

/** Collects a response body as raw bytes, whatever its content type. */
function binary(res: import('superagent').Response, callback: (err: Error | null, body: Buffer) => void): void {
  const stream = res as unknown as NodeJS.ReadableStream;
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  stream.on('end', () => callback(null, Buffer.concat(chunks)));
}

describe('share password guesses from many addresses', () => {
  let t: TestApp;
  let owner: TestAccount;

  beforeAll(async () => {
    // Behind a proxy the client address comes from X-Forwarded-For, so one test can be many clients.
    t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '100000', TRUST_PROXY: 'true' });
    owner = await createAccount(t.app);
  });
  afterAll(() => t.close());

  /**
   * A link that has had 33 wrong passwords from many addresses in the last hours, its last back-off over: the next
   * guess, checked, would back it off for an hour. Answers a Redis connection (closed after the test) and the link's key.
   */
  const pastItsFreeFailures = async (shareId: string) => {
    const linkKey = `${t.config.redisKeyPrefix}:share-password-link:${shareId}`;
    const redis = new Redis(TEST_REDIS_URL);
    onTestFinished(() => {
      redis.disconnect();
    });
    await redis.multi().hset(linkKey, { attempts: 33, locked_until: Date.now() - 1000 }).pexpire(linkKey, 60 * 60_000).exec();
    return { redis, linkKey };
  };

  const protectedShare = async () => {
    const file = await seedFile(t.app, owner, { content: CONTENT, mimeType: 'text/plain' });
    return createShare(t, owner, { file_id: file.id, password: 'the right one' });
  };
  const guess = (path: string, from: string, password: string) => t.http().get(path).set('X-Forwarded-For', from).set('X-Share-Password', password);
  /** Ends the link's current back-off, as waiting Retry-After seconds would. */
  const endBackoff = async (shareId: string) => {
    const redis = new Redis(TEST_REDIS_URL);
    try {
      await redis.hdel(`${t.config.redisKeyPrefix}:share-password-link:${shareId}`, 'locked_until');
    } finally {
      redis.disconnect();
    }
  };

  it('backs a link off with a doubling delay after 20 wrong passwords, however many addresses guess', async () => {
    const share = await protectedShare();
    // The service's clock stands still, so Retry-After is the whole back-off: on a loaded machine checking a wrong
    // password alone can take longer than a second, and a later guess would rightly be told less.
    const now = new Date();
    vi.spyOn(t.app.get(Clock), 'now').mockImplementation(() => now);
    onTestFinished(() => {
      vi.restoreAllMocks();
    });
    for (let i = 1; i <= 20; i++) expect((await guess(share.path, `203.0.113.${i}`, `guess ${i}`)).status, `guess ${i}`).toBe(401);
    // The 21st is checked and starts a back-off of 1 s for everyone, the right password included.
    expect((await guess(share.path, '203.0.113.21', 'guess 21')).status).toBe(401);
    for (const [from, password] of [['203.0.113.22', 'guess 22'], ['198.51.100.1', 'the right one']]) {
      const refused = await guess(share.path, from, password);
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limit_exceeded');
      expect(refused.headers['retry-after']).toBe('1');
    }
    // Each further wrong password doubles the wait: 2 s, then 4 s.
    for (const expected of ['2', '4']) {
      await endBackoff(share.id);
      expect((await guess(share.path, '203.0.113.30', 'another guess')).status).toBe(401);
      const refused = await guess(share.path, '203.0.113.31', 'yet another');
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe(expected);
    }
    // Between back-offs the right password still opens the link, and it is not counted as a failure.
    await endBackoff(share.id);
    expect((await guess(share.path, '198.51.100.1', 'the right one')).status).toBe(200);
  });

  it('cannot be outpaced by parallel guesses from many addresses: 21 are checked, the rest wait', async () => {
    const share = await protectedShare();
    // The service's clock stands still, as if the 30 guesses arrived at once: on a loaded machine they can take
    // longer than the 1 s back-off, and a guess after it is rightly checked.
    const now = new Date();
    vi.spyOn(t.app.get(Clock), 'now').mockImplementation(() => now);
    try {
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => guess(share.path, `192.0.2.${i + 1}`, `parallel ${i}`)));
      const statuses = answers.map((res) => res.status);
      expect(statuses.filter((s) => s === 401)).toHaveLength(21);
      expect(statuses.filter((s) => s === 429)).toHaveLength(9);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('lets the right password in, and the download after it, on a link that has had 33 wrong ones: it neither starts nor extends a back-off', async () => {
    const share = await protectedShare();
    // 33 wrong passwords from many addresses in the last hours, the last back-off over (the counting is tested above).
    const { redis, linkKey } = await pastItsFreeFailures(share.id);
    const visitor = (from: string) => ({ 'X-Forwarded-For': from, 'X-Share-Password': 'the right one' });

    await t.http().get(share.path).set(visitor('198.51.100.7')).expect(200);
    // The download right after opening the link, resumed with ranges, and another visitor's: none is made to wait.
    await t.http().get(`${share.path}/download`).set(visitor('198.51.100.7')).expect(200);
    await t.http().get(`${share.path}/download`).set(visitor('198.51.100.7')).set('Range', 'bytes=0-99').expect(206);
    await t.http().get(`${share.path}/download`).set(visitor('198.51.100.7')).set('Range', 'bytes=100-').expect(206);
    await t.http().get(`${share.path}/download`).set(visitor('198.51.100.8')).expect(200);
    expect(Number((await shareRow(t.app, share.id)).access_count)).toBe(5);

    // Right passwords are not wrong ones: the link still forgets its wrong passwords 24 h after the last of them
    // (here within the hour), not after the last visit, so a link in regular use recovers.
    const memory = await redis.pttl(linkKey);
    expect(memory).toBeGreaterThan(0);
    expect(memory).toBeLessThanOrEqual(60 * 60_000);
    // Nor were they counted: the next wrong password is the 34th, checked, and backs the link off for the hour it would
    // (for a visitor who has not given the right password before).
    expect((await guess(share.path, '203.0.113.40', 'a wrong one')).status).toBe(401);
    const refused = await guess(share.path, '198.51.100.9', 'the right one');
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('3600');
  });

  it('lets right passwords that arrive together past the free failures in one check at a time, none told to wait out a back-off that never comes', async () => {
    const share = await protectedShare();
    // A password check that takes a while, as on a busy server, so the others arrive while it runs.
    await slowDownPasswordCheck(t.app, share.id, 'the right one');
    // 33 wrong passwords in the last hours, the last back-off over: the next guess, checked, would back the link off for an hour.
    const { redis, linkKey } = await pastItsFreeFailures(share.id);

    const answers = await Promise.all(['198.51.100.21', '198.51.100.22', '198.51.100.23', '198.51.100.24'].map((from) => guess(share.path, from, 'the right one')));
    for (const res of answers) {
      // Each is let in once the check before it proved right; one still waiting after a few seconds is told to come back in seconds, not an hour.
      if (res.status === 429) expect(Number(res.headers['retry-after']), 'Retry-After').toBeLessThanOrEqual(PASSWORD_CHECK_DEADLINE_MS / 1000);
      else expect(res.status).toBe(200);
    }
    expect(answers.filter((res) => res.status === 200).length).toBeGreaterThanOrEqual(2);
    // None was counted, and the link is not backing off.
    expect(await redis.hget(linkKey, 'attempts')).toBe('33');
    expect((await guess(share.path, '198.51.100.25', 'the right one')).status).toBe(200);
  });

  it('still checks one guess per back-off when wrong passwords arrive together during a slow check: the rest get the whole back-off', async () => {
    const share = await protectedShare();
    await slowDownPasswordCheck(t.app, share.id, 'the right one');
    const { redis, linkKey } = await pastItsFreeFailures(share.id);

    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => guess(share.path, `203.0.113.${60 + i}`, `wrong ${i}`)));
    expect(answers.filter((res) => res.status === 401)).toHaveLength(1);
    const refused = answers.filter((res) => res.status === 429);
    expect(refused).toHaveLength(5);
    // They waited for the one in flight, which proved wrong: the hour's back-off it started holds for them in full.
    for (const res of refused) expect(Number(res.headers['retry-after'])).toBeGreaterThan(3500);
    const right = await guess(share.path, '198.51.100.26', 'the right one');
    expect(right.status).toBe(429);
    expect(Number(right.headers['retry-after'])).toBeGreaterThan(3500);
    expect(await redis.hget(linkKey, 'attempts')).toBe('34');
  });

  it('keeps letting in the visitors who gave the right password while someone who knows the token keeps the link backing off', async () => {
    const share = await protectedShare();
    const colleague = (password = 'the right one') => ({ 'X-Forwarded-For': '198.51.100.60', 'X-Share-Password': password });
    await t.http().get(share.path).set(colleague()).expect(200);
    // Later an attacker spends the free failures and holds the link in its hour-long back-off with one guess an hour.
    const { redis, linkKey } = await pastItsFreeFailures(share.id);
    expect((await guess(share.path, '203.0.113.90', 'a wrong one')).status).toBe(401);
    const stranger = await guess(share.path, '198.51.100.61', 'the right one');
    expect(stranger.status).toBe(429);
    expect(Number(stranger.headers['retry-after'])).toBeGreaterThan(3500);

    // The colleague who opened the link before is not held: the metadata, the file, and the page's password form.
    await t.http().get(share.path).set(colleague()).expect(200);
    await t.http().get(`${share.path}/download`).set(colleague()).expect(200);
    const page = await t.http().get(share.path).set('Accept', 'text/html').set('X-Forwarded-For', '198.51.100.60').expect(200);
    expect(page.text).toContain('<form method="post"');
    expect(await redis.hget(linkKey, 'attempts')).toBe('34');

    // Its own limit still holds: its wrong passwords leave the link's count alone, and the 10th locks it out like anyone.
    for (let i = 1; i <= 10; i++) expect((await t.http().get(share.path).set(colleague(`wrong ${i}`))).status, `wrong ${i}`).toBe(401);
    expect(await redis.hget(linkKey, 'attempts')).toBe('34');
    const lockedOut = await t.http().get(share.path).set(colleague());
    expect(lockedOut.status).toBe(429);
    expect(lockedOut.body.error.details).toMatchObject({ limit: 10 });
  });

  it('counts an IPv6 client by its /64: new host parts of one network share its 10 attempts', async () => {
    const share = await protectedShare();
    for (let i = 1; i <= 10; i++) expect((await guess(share.path, `2001:db8:aa:bb::${i}`, `guess ${i}`)).status).toBe(401);
    expect((await guess(share.path, '2001:db8:aa:bb:ffff::1', 'guess 11')).status).toBe(429);
    // Another /64 is another client.
    expect((await guess(share.path, '2001:db8:aa:cc::1', 'the right one')).status).toBe(200);
  });
});
