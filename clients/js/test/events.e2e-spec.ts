import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../../test/support/accounts.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { recordEvent, startWebhookReceiver, type WebhookReceiver } from '../../../test/support/webhook-receiver.js';
import { CursorExpiredError, type FeedEvent, FileStorage, InvalidRequestError } from '../src/index.js';
import { TrimEventsCommand } from '../../../src/modules/events/commands/trim-events.command.js';
import { CommandBus } from '@nestjs/cqrs';
import { DataSource } from 'typeorm';
import { eventually } from '../../../test/support/time.js';

describe('the JavaScript client: event feed and webhook replay', () => {
  let t: TestApp;
  let account: TestAccount;
  let client: FileStorage;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    t = await startTestApp();
    receiver = await startWebhookReceiver();
    account = await createAccount(t.app);
    client = new FileStorage({ apiKey: account.apiKey, baseUrl: t.baseUrl });
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.close();
  });

  it('lists the feed page by page and tails it, receiving an upload made while it waits', async () => {
    const folder = await client.folders.create({ name: 'Feed' });
    await eventually(async () => (await client.events.list()).data.length === 1, 10_000, 'the folder.created event');
    const first = await client.events.list({ limit: 1, types: ['folder.created'] });
    expect(first.data[0]).toMatchObject({ event: 'folder.created', data: { folder: { id: folder.id } } });
    expect(first.next_cursor).toEqual(expect.any(String));

    const abort = new AbortController();
    const tail = client.events.tail({ after: first.next_cursor, wait: 10 }, { signal: abort.signal });
    const received: FeedEvent[] = [];
    const tailing = (async () => {
      for await (const event of tail) {
        received.push(event);
        if (received.length === 2) break;
      }
    })();
    const uploaded = await client.files.upload(Buffer.from('tailed'), { name: 'tailed.txt' });
    await client.folders.create({ name: 'Later' });
    await tailing;
    expect(received.map((e) => e.event)).toEqual(['file.uploaded', 'folder.created']);
    expect(received[0].data).toMatchObject({ file: { id: uploaded.id } });
    expect(tail.cursor).toEqual(expect.any(String));
    expect((await client.events.list({ after: tail.cursor })).data).toEqual([]);
  }, 40_000);

  it('throws typed errors for a bad cursor and for an expired one', async () => {
    await expect(client.events.list({ after: 'not-a-cursor' })).rejects.toBeInstanceOf(InvalidRequestError);
    const start = await client.events.list({ limit: 1 });
    const db = t.app.get(DataSource);
    await eventually(async () => (await db.query('SELECT id FROM outbox_events WHERE relayed_at IS NULL')).length === 0, 20_000, 'events relayed');
    await t.app.get(CommandBus).execute(new TrimEventsCommand(new Date(Date.now() + 31 * 86_400_000)));
    await expect(client.events.list({ after: start.next_cursor })).rejects.toBeInstanceOf(CursorExpiredError);
  });

  it('replays a window of events to a webhook', async () => {
    const other = await createAccount(t.app);
    const otherClient = new FileStorage({ apiKey: other.apiKey, baseUrl: t.baseUrl });
    const since = new Date(Date.now() - 10_000);
    await recordEvent(t.app, 'file.uploaded', other.accountId, { file: { id: 'file_replayed' } });
    const webhook = await otherClient.webhooks.create({ url: `${receiver.url}/client-replay`, events: ['file.uploaded'] });
    expect(await otherClient.webhooks.replay(webhook.id, { since, until: new Date(Date.now() + 1000) })).toEqual({ queued: 1 });
    const [delivery] = await receiver.waitFor((r) => r.some((d) => d.path === '/hooks/client-replay'), 20_000);
    expect(delivery.body.data).toMatchObject({ file: { id: 'file_replayed' } });
  });
});
