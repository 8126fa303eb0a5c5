import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { AuthenticateApiKeyQuery } from '../../../src/modules/accounts/queries/authenticate-api-key.query.js';
import { TrimEventsCommand } from '../../../src/modules/events/commands/trim-events.command.js';
import { ListEventsHandler } from '../../../src/modules/events/queries/list-events.query.js';
import { createAccount, createKey, type TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import { drainFeed, feedSettled, readFeed } from '../../support/events.js';
import { TEST_DB, type TestApp } from '../../support/test-app.js';
import { uploadOk } from '../../support/uploads.js';
import { eventually, sleep } from '../../support/time.js';
import { recordEvent } from '../../support/webhook-receiver.js';
import { FeedWakeups } from '../../../src/modules/events/feed-wakeups.js';
import { DeliveryDispatcher } from '../../../src/modules/webhooks/delivery/delivery-dispatcher.js';

const uploaded = (i: number) => ({ file: { id: `file_${i}`, name: `f${i}.txt`, size: i, type: 'text/plain', folder_id: null, uploaded_by: 'usr_x', created_at: new Date().toISOString() } });
const DAY = 86_400_000;

describe('event feed: GET /v1/events', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started));
  let other: TestAccount;

  beforeAll(async () => {
    other = await createAccount(t.app);
  });

  it('pages through the account\'s events oldest first, each with its stable id, and never shows another account\'s', async () => {
    const account = await createAccount(t.app);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(i)));
      await recordEvent(t.app, 'file.uploaded', other.accountId, uploaded(100 + i));
    }
    await feedSettled(t.app);

    const first = await readFeed(t.baseUrl, account.auth, { limit: 2 });
    expect(first.status).toBe(200);
    expect(first.events.map((e) => e.id)).toEqual(ids.slice(0, 2));
    expect(first.events[0]).toEqual({ id: ids[0], event: 'file.uploaded', timestamp: expect.any(String), data: expect.objectContaining({ file: expect.objectContaining({ id: 'file_0' }) }) });
    const second = await readFeed(t.baseUrl, account.auth, { limit: 2, after: first.nextCursor });
    expect(second.events.map((e) => e.id)).toEqual(ids.slice(2, 4));
    const third = await readFeed(t.baseUrl, account.auth, { limit: 2, after: second.nextCursor });
    expect(third.events.map((e) => e.id)).toEqual(ids.slice(4));
    // The end of the feed still answers a cursor to keep polling with, and it sees only what comes later.
    const end = await readFeed(t.baseUrl, account.auth, { after: third.nextCursor });
    expect(end.events).toEqual([]);
    expect(end.nextCursor).toEqual(expect.any(String));
    const later = await recordEvent(t.app, 'folder.created', account.accountId, { folder: { id: 'fld_1' } });
    await feedSettled(t.app);
    expect((await readFeed(t.baseUrl, account.auth, { after: end.nextCursor })).events.map((e) => e.id)).toEqual([later]);
    // Repeating a request with the same cursor answers the same events: the cursor is a position, not a consumption.
    expect((await readFeed(t.baseUrl, account.auth, { limit: 2, after: first.nextCursor })).events.map((e) => e.id)).toEqual(ids.slice(2, 4));
  });

  it('filters by types, and the cursor moves past the events it filtered out', async () => {
    const account = await createAccount(t.app);
    const uploadedIds = [await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(1))];
    await recordEvent(t.app, 'folder.created', account.accountId, { folder: { id: 'fld_1' } });
    uploadedIds.push(await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(2)));
    const deleted = await recordEvent(t.app, 'file.deleted', account.accountId, { file: { id: 'file_1' } });
    await feedSettled(t.app);

    const page = await readFeed(t.baseUrl, account.auth, { types: 'file.uploaded' });
    expect(page.events.map((e) => e.id)).toEqual(uploadedIds);
    expect((await readFeed(t.baseUrl, account.auth, { types: 'file.deleted,file.uploaded' })).events.map((e) => e.id)).toEqual([...uploadedIds, deleted]);
    expect((await readFeed(t.baseUrl, account.auth, { types: 'file.uploaded', after: page.nextCursor })).events).toEqual([]);
  });

  it('refuses an unknown type, a tampered or foreign cursor and out-of-range limit or wait with 400', async () => {
    const account = await createAccount(t.app);
    await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(1));
    await feedSettled(t.app);
    const { nextCursor } = await readFeed(t.baseUrl, account.auth);

    const unknownType = await readFeed(t.baseUrl, account.auth, { types: 'file.uploaded,file.exploded' });
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [expect.objectContaining({ field: 'types' })] } });

    const [position, mac] = nextCursor.split('.');
    const altered = `${(parseInt(position, 36) - 1).toString(36)}.${mac}`;
    // The MAC's last character changed in its spare bits only: decoded, the same bytes; still not the cursor issued.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const respelled = `${position}.${mac.slice(0, -1)}${alphabet[alphabet.indexOf(mac.at(-1)!) ^ 1]}`;
    for (const cursor of [altered, respelled, `${nextCursor}x`, 'garbage', '']) {
      const answer = await readFeed(t.baseUrl, account.auth, { after: cursor });
      expect(answer.status, cursor).toBe(400);
      expect(answer.body.error.code).toBe('invalid_request');
    }
    // Another account's cursor is refused as well: a cursor is bound to the account it was issued to.
    const foreign = await readFeed(t.baseUrl, other.auth, { after: nextCursor });
    expect(foreign.status).toBe(400);

    for (const query of [{ limit: 0 }, { limit: 1001 }, { wait: 31 }, { wait: -1 }]) {
      expect((await readFeed(t.baseUrl, account.auth, query)).status, JSON.stringify(query)).toBe(400);
    }
  });

  it.each([
    ['wait=-1', { field: 'wait', message: 'must not be less than 0' }],
    ['limit=-1', { field: 'limit', message: 'must not be less than 1' }],
    ['wait=1.5', { field: 'wait', message: 'must be an integer number' }],
  ])('says what is wrong with %s', async (query, problem) => {
    const res = await t.http().get(`/v1/events?${query}`).set(owner.auth);
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields).toEqual([problem]);
  });

  it('needs the read scope', async () => {
    const writeOnly = await createKey(t.app, owner, ['write']);
    expect((await readFeed(t.baseUrl, writeOnly.auth)).status).toBe(403);
    const readOnly = await createKey(t.app, owner, ['read']);
    expect((await readFeed(t.baseUrl, readOnly.auth)).status).toBe(200);
  });

  it('long-polls: a waiting request is answered with the event of an upload made while it waits', async () => {
    const account = await createAccount(t.app);
    const { nextCursor } = await readFeed(t.baseUrl, account.auth);
    const asked = Date.now();
    const waiting = readFeed(t.baseUrl, account.auth, { after: nextCursor, wait: 25 });
    // Let the request reach its wait before the upload; it must not be answered earlier.
    const early = await Promise.race([waiting.then(() => 'answered'), new Promise((resolve) => setTimeout(() => resolve('waiting'), 300))]);
    expect(early).toBe('waiting');

    const file = await uploadOk(t, account.auth, 'hello feed', { name: 'feed.txt' });
    const answer = await waiting;
    // Woken by the event, not answered at the 25 s deadline (which reads the feed again and would find it too): the
    // bound is the deadline itself, not a guess at how fast the machine is.
    expect(Date.now() - asked).toBeLessThan(24_000);
    expect(answer.status).toBe(200);
    expect(answer.events).toHaveLength(1);
    expect(answer.events[0]).toMatchObject({ event: 'file.uploaded', data: { file: { id: file.id, name: 'feed.txt' } } });
  }, 40_000);

  it('long-polls: does not share a read begun before the event it waits for was stamped, so it is answered at once', async () => {
    const { cursor } = await drainFeed(t.baseUrl, owner.auth);
    const handler = t.app.get(ListEventsHandler) as unknown as { read: (...args: unknown[]) => Promise<unknown> };
    const read = handler.read.bind(handler);
    // Reads answer 1.5 s after their statements ran, as on a loaded database.
    const slow = vi.spyOn(handler, 'read').mockImplementation(async (...args: unknown[]) => {
      const page = await read(...args);
      await sleep(1_500);
      return page;
    });
    try {
      const before = readFeed(t.baseUrl, owner.auth, { after: cursor });
      await sleep(200);
      const id = await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(77));
      await feedSettled(t.app);
      await sleep(200);
      const started = Date.now();
      const waited = await readFeed(t.baseUrl, owner.auth, { after: cursor, wait: 10 });
      expect(waited.events.map((e) => e.id)).toEqual([id]);
      expect(Date.now() - started).toBeLessThan(6_000);
      expect((await before).events).toEqual([]);
    } finally {
      slow.mockRestore();
    }
  });

  it('long-polls: answers empty, with a cursor to continue from, when nothing arrives before the deadline', async () => {
    const account = await createAccount(t.app);
    const { nextCursor } = await readFeed(t.baseUrl, account.auth);
    // Another account's event wakes nobody here.
    const elsewhere = sleep(200).then(() => recordEvent(t.app, 'file.uploaded', other.accountId, uploaded(7)));
    const started = Date.now();
    const answer = await readFeed(t.baseUrl, account.auth, { after: nextCursor, wait: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    await elsewhere;
    expect(answer.status).toBe(200);
    expect(answer.events).toEqual([]);
    expect((await readFeed(t.baseUrl, account.auth, { after: answer.nextCursor })).status).toBe(200);
  });

  it('long-polls: a key revoked while its request waits is answered nothing of what came after the revocation, then 401', async () => {
    const account = await createAccount(t.app);
    const reader = await createKey(t.app, account, ['read']);
    const { nextCursor } = await readFeed(t.baseUrl, reader.auth);
    const wakeups = t.app.get(FeedWakeups);
    const before = wakeups.waiters;
    const waiting = readFeed(t.baseUrl, reader.auth, { after: nextCursor, wait: 25 });
    await eventually(async () => wakeups.waiters > before, 10_000, 'the request waiting');

    expect((await fetch(`${t.baseUrl}/v1/api-keys/${reader.id}`, { method: 'DELETE', headers: account.auth })).status).toBe(200);
    await uploadOk(t, account.auth, 'written after the revocation', { name: 'after-revocation.txt' });
    const answer = await waiting;
    expect(answer.status).toBe(200);
    expect(answer.events).toEqual([]);
    const next = await readFeed(t.baseUrl, reader.auth, { after: answer.nextCursor });
    expect(next.status).toBe(401);
    expect(next.body.error.code).toBe('authentication_failed');
    // The event is in the feed, for keys that are still valid.
    expect((await readFeed(t.baseUrl, account.auth, { after: nextCursor })).events.map((e) => e.data)).toEqual([
      expect.objectContaining({ file: expect.objectContaining({ name: 'after-revocation.txt' }) }),
    ]);
  }, 40_000);

  it('stops waiting when the client goes away', async () => {
    const account = await createAccount(t.app);
    const wakeups = t.app.get(FeedWakeups);
    const before = wakeups.waiters;
    const abort = new AbortController();
    const waiting = readFeed(t.baseUrl, account.auth, { wait: 25 }, abort.signal).catch(() => 'aborted');
    await eventually(async () => wakeups.waiters > before, 10_000, 'the request waiting');
    abort.abort();
    expect(await waiting).toBe('aborted');
    await eventually(async () => wakeups.waiters === before, 10_000, 'the wait cleaned up');
  });

  it('stops waiting when the client went away before its request got to wait (while its key was being checked)', async () => {
    const account = await createAccount(t.app);
    const wakeups = t.app.get(FeedWakeups);
    const queries = t.app.get(QueryBus);
    const execute = queries.execute.bind(queries);
    // Key checks answer after half a second, as on a loaded server.
    const slow = vi.spyOn(queries, 'execute').mockImplementation(async (query) => {
      if (query instanceof AuthenticateApiKeyQuery) await sleep(500);
      return execute(query);
    });
    try {
      const before = wakeups.waiters;
      const abort = new AbortController();
      const waiting = readFeed(t.baseUrl, account.auth, { wait: 25 }, abort.signal).catch(() => 'aborted');
      await sleep(100);
      abort.abort();
      expect(await waiting).toBe('aborted');
      // Well after the key check: the request reached the feed with nobody to answer, and must not wait 25 s.
      await sleep(1_500);
      expect(wakeups.waiters).toBe(before);
    } finally {
      slow.mockRestore();
    }
  });
});

describe('event feed long polls with an HTTP idle limit shorter than the wait', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started), { env: { HTTP_IDLE_TIMEOUT_SECONDS: '1' } });

  it('answers a wait longer than HTTP_IDLE_TIMEOUT_SECONDS at its deadline or with the event, never 408 for the connection being idle', async () => {
    const { nextCursor } = await readFeed(t.baseUrl, owner.auth);
    const empty = await readFeed(t.baseUrl, owner.auth, { after: nextCursor, wait: 3 });
    expect(empty.status).toBe(200);
    expect(empty.events).toEqual([]);

    const waiting = readFeed(t.baseUrl, owner.auth, { after: empty.nextCursor, wait: 10 });
    // Well past the idle limit before anything happens.
    await sleep(2_500);
    const id = await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(5));
    const woken = await waiting;
    expect(woken.status).toBe(200);
    expect(woken.events.map((e) => e.id)).toEqual([id]);
  }, 30_000);
});

describe('event feed retention', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started));

  it('trims events older than the retention; a cursor from before them answers 410 cursor_expired, never a silent gap', async () => {
    const old = [await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(1)), await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(2))];
    await feedSettled(t.app);
    const start = await readFeed(t.baseUrl, owner.auth, { limit: 1 });
    expect(start.events.map((e) => e.id)).toEqual([old[0]]);
    const db = t.app.get(DataSource);
    await eventually(async () => (await db.query('SELECT id FROM outbox_events WHERE relayed_at IS NULL')).length === 0, 20_000, 'events relayed');

    // 31 days later (the default retention is 30), the trim removes both.
    const trimmed = await t.app.get(CommandBus).execute(new TrimEventsCommand(new Date(Date.now() + 31 * DAY)));
    expect(trimmed.trimmed).toBe(2);
    const expired = await readFeed(t.baseUrl, owner.auth, { after: start.nextCursor });
    expect(expired.status).toBe(410);
    expect(expired.body.error.code).toBe('cursor_expired');
    // A long poll refused the same way leaves nothing waiting behind it.
    const waitersBefore = t.app.get(FeedWakeups).waiters;
    for (let i = 0; i < 5; i++) expect((await readFeed(t.baseUrl, owner.auth, { after: start.nextCursor, wait: 30 })).status).toBe(410);
    expect(t.app.get(FeedWakeups).waiters).toBe(waitersBefore);

    // Starting again without a cursor reads on from the oldest retained event.
    const fresh = await recordEvent(t.app, 'file.uploaded', owner.accountId, uploaded(3));
    await feedSettled(t.app);
    const restart = await readFeed(t.baseUrl, owner.auth);
    expect(restart.status).toBe(200);
    expect(restart.events.map((e) => e.id)).toEqual([fresh]);
    // A current cursor survives later trims that remove nothing after it.
    await t.app.get(CommandBus).execute(new TrimEventsCommand(new Date(Date.now() + 31 * DAY)));
    expect((await readFeed(t.baseUrl, owner.auth, { after: restart.nextCursor })).status).toBe(200);
  });

  it('answers 410 cursor_expired for a cursor past the end of the feed (the database restored from an earlier copy), never a silent skip', async () => {
    const db = t.app.get(DataSource);
    const account = await createAccount(t.app);
    const lost = [await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(1)), await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(2))];
    await feedSettled(t.app);
    const { cursor } = await drainFeed(t.baseUrl, account.auth);

    // The database goes back to a copy taken before both events: their positions will be handed out again.
    const placeholders = TEST_DB === 'postgres' ? '$1, $2' : '?, ?';
    await db.query(`DELETE FROM outbox_events WHERE id IN (${placeholders})`, lost);
    await db.query('UPDATE event_feed_sequence SET last_position = last_position - 2 WHERE id = 1');
    const next = await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(3));
    await feedSettled(t.app);

    const answer = await readFeed(t.baseUrl, account.auth, { after: cursor });
    expect(answer.status).toBe(410);
    expect(answer.body.error.code).toBe('cursor_expired');
    expect(answer.body.error.message).toMatch(/past the end of the feed/);
    // Starting again finds the event the old cursor would have skipped.
    expect((await drainFeed(t.baseUrl, account.auth)).events.map((e) => e.id)).toContain(next);
  });

  it('never trims an event not yet relayed to webhooks, nor anything after it', async () => {
    const db = t.app.get(DataSource);
    const account = await createAccount(t.app);
    const stuck = await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(1));
    const after = await recordEvent(t.app, 'file.uploaded', account.accountId, uploaded(2));
    await feedSettled(t.app);
    await eventually(async () => (await db.query('SELECT id FROM outbox_events WHERE relayed_at IS NULL')).length === 0, 20_000, 'events relayed');
    const params = db.options.type === 'postgres' ? '$1' : '?';
    // As if the relay had not reached it yet; the relay is stopped meanwhile, or its next poll could relay it again
    // before the trim.
    const dispatcher = t.app.get(DeliveryDispatcher);
    await dispatcher.onApplicationShutdown();
    try {
      await db.query(`UPDATE outbox_events SET relayed_at = NULL WHERE id = ${params}`, [stuck]);
      await t.app.get(CommandBus).execute(new TrimEventsCommand(new Date(Date.now() + 31 * DAY)));
    } finally {
      dispatcher.onApplicationBootstrap();
    }
    const { events } = await drainFeed(t.baseUrl, account.auth);
    expect(events.map((e) => e.id)).toEqual([stuck, after]);
  });
});
