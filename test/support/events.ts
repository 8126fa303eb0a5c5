import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { eventually } from './time.js';

export interface FeedEvent {
  id: string;
  event: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export interface FeedPage {
  status: number;
  events: FeedEvent[];
  nextCursor: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** GET /v1/events with these query parameters; answers the status, the events and next_cursor. */
export async function readFeed(baseUrl: string, auth: Record<string, string>, query: Record<string, string | number | undefined> = {}, signal?: AbortSignal): Promise<FeedPage> {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  const response = await fetch(`${baseUrl}/v1/events?${params}`, { headers: auth, signal });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const body = (await response.json()) as any;
  return { status: response.status, events: body.data ?? [], nextCursor: body.next_cursor, body };
}

/** Every event of the feed after `after`, page by page until an empty page; answers them and the last cursor. */
export async function drainFeed(baseUrl: string, auth: Record<string, string>, after?: string, limit = 1000): Promise<{ events: FeedEvent[]; cursor: string }> {
  const events: FeedEvent[] = [];
  let cursor = after;
  for (;;) {
    const page = await readFeed(baseUrl, auth, { after: cursor, limit });
    if (page.status !== 200) throw new Error(`feed answered ${page.status}: ${JSON.stringify(page.body)}`);
    events.push(...page.events);
    cursor = page.nextCursor;
    if (page.events.length === 0) return { events, cursor };
  }
}

/** Waits until every outbox event has its feed position (the sequencer runs in the background). */
export async function feedSettled(app: INestApplicationContext, timeoutMs = 20_000): Promise<void> {
  const db = app.get(DataSource);
  await eventually(async () => (await db.query('SELECT id FROM outbox_events WHERE feed_position IS NULL LIMIT 1')).length === 0, timeoutMs, 'every event stamped');
}
