import { HttpStatus } from '@nestjs/common';
import { IQueryHandler, Query, QueryBus, QueryHandler } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { ApiError, CursorExpired, InvalidRequest } from '../../../common/errors/api-error.js';
import { CursorPage } from '../../../common/http/envelope.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { EVENT_NAMES } from '../../../infra/outbox/domain-event.js';
import { ApiKeyCache } from '../../accounts/api-key-cache.js';
import { IsApiKeyLiveQuery } from '../../accounts/queries/is-api-key-live.query.js';
import { EventResponse } from '../dto/event.response.js';
import type { ListEventsRequest } from '../dto/list-events.request.js';
import { EventFeedCursor } from '../event-feed-cursor.js';
import { FeedWakeups } from '../feed-wakeups.js';

export class ListEventsQuery extends Query<CursorPage<EventResponse>> {
  constructor(
    readonly actor: Actor,
    readonly request: ListEventsRequest,
    /** Aborted when the client goes away, which ends a long poll at once. */
    readonly signal: AbortSignal,
  ) {
    super();
  }
}

interface FeedRow {
  id: string;
  event: string;
  payload: string;
  occurred_at: string;
  feed_position: string | number;
}

/**
 * The account's events after a cursor, in feed-position order. Reads in this order, each statement seeing
 * every commit before it: (1) the last stamped position H, (2) the events in (cursor, H], (3) how far the
 * feed has been trimmed. Every position up to H was committed before H was, so (2) has no holes; a trim that
 * removed events (2) should have returned shows in (3), which turns the answer into 410 cursor_expired.
 */
@QueryHandler(ListEventsQuery)
export class ListEventsHandler implements IQueryHandler<ListEventsQuery> {
  /**
   * Reads in flight by what they read: the clients tailing one account share a cursor, and a wake-up sends
   * them all to read at once; they share one read instead of each running the same queries.
   */
  private readonly inFlight = new Map<string, Promise<CursorPage<EventResponse>>>();

  constructor(
    private readonly transactions: Transactions,
    private readonly cursors: EventFeedCursor,
    private readonly wakeups: FeedWakeups,
    private readonly config: AppConfig,
    private readonly queries: QueryBus,
    private readonly keyCache: ApiKeyCache,
  ) {}

  async execute({ actor, request, signal }: ListEventsQuery): Promise<CursorPage<EventResponse>> {
    const types = parseTypes(request.types);
    const after = request.after === undefined ? null : this.cursors.decode(actor.accountId, request.after);
    const deadline = Date.now() + request.wait * 1000;
    // Taken as the request starts, moments after its key was checked.
    const keysCheckedAt = this.keyCache.checkpoint();
    for (;;) {
      const wait = request.wait > 0 ? this.wakeups.prepare(actor.accountId) : null;
      const page = await this.sharedRead(actor.accountId, after, request.limit, types).catch((error: unknown) => {
        // A 410 cursor_expired or a failed read: nobody will wait on this registration.
        wait?.cancel();
        throw error;
      });
      if (page.items.length > 0 || wait === null || Date.now() >= deadline || signal.aborted) {
        wait?.cancel();
        return page;
      }
      await wait.until(deadline, signal);
      if (signal.aborted || this.wakeups.closed) return page;
      // The key was checked when the request arrived, up to `wait` seconds ago. Revoked meanwhile, it gets the answer
      // read then (nothing), none of what happened since; its next request is refused with 401. Only a wait during
      // which some key was revoked (or revocations could go unheard) costs a lookup: a thousand waiters woken at
      // once must not make a thousand queries.
      if (!this.keyCache.unchangedSince(keysCheckedAt) && !(await this.queries.execute(new IsApiKeyLiveQuery(actor.keyId)))) return page;
    }
  }

  /**
   * Joins a read of the same page in flight, if it began since the last wake-up: one begun before may have missed
   * events whose wake-up this request, registered after that wake-up went out, will never get.
   */
  private sharedRead(accountId: string, after: number | null, limit: number, types: string[] | null): Promise<CursorPage<EventResponse>> {
    const key = `${this.wakeups.generation}|${accountId}|${after ?? 'oldest'}|${limit}|${types?.join(',') ?? ''}`;
    let read = this.inFlight.get(key);
    if (!read) {
      read = this.read(accountId, after, limit, types).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, read);
    }
    return read;
  }

  private async read(accountId: string, after: number | null, limit: number, types: string[] | null): Promise<CursorPage<EventResponse>> {
    const db = this.transactions.dataSource;
    const dialect = this.transactions.dialect;
    const [before]: Array<{ last_position: string | number; trimmed_through: string | number }> = await db.query(
      'SELECT last_position, trimmed_through FROM event_feed_sequence WHERE id = 1',
    );
    const stampedThrough = Number(before.last_position);
    // Positions only grow, so a cursor past the last one is not of this feed's history (the database was restored from
    // an earlier copy): the positions it passes will be given to new events, which it would skip unseen.
    if (after !== null && after > stampedThrough) throw cursorPastTheEnd(this.config.eventRetentionDays);
    const from = after ?? Number(before.trimmed_through);
    const params = dialect.parameters();
    // Placeholders in the order they appear: SQLite's are positional.
    const range = `account_id = ${params.add(accountId)} AND feed_position > ${params.add(from)} AND feed_position <= ${params.add(stampedThrough)}`;
    const typeFilter = types ? ` AND event IN (SELECT value FROM ${dialect.jsonValues(params.add(JSON.stringify(types)))})` : '';
    const rows: FeedRow[] = await db.query(
      `SELECT id, event, payload, occurred_at, feed_position FROM outbox_events WHERE ${range}${typeFilter} ORDER BY feed_position LIMIT ${limit}`,
      params.values,
    );
    const [trim]: Array<{ trimmed_through: string | number }> = await db.query('SELECT trimmed_through FROM event_feed_sequence WHERE id = 1');
    if (from < Number(trim.trimmed_through)) {
      // Without a cursor the client asked for the oldest retained event: a trim meanwhile only moved that.
      if (after === null) return this.read(accountId, after, limit, types);
      throw new CursorExpired(this.config.eventRetentionDays);
    }
    // A short page saw everything up to H, so the next read may start there (also when nothing matched).
    const next = rows.length === limit ? Number(rows[rows.length - 1].feed_position) : Math.max(from, stampedThrough);
    return new CursorPage(rows.map(EventResponse.from), this.cursors.encode(accountId, next));
  }
}

function parseTypes(types: string | undefined): string[] | null {
  if (types === undefined) return null;
  const names = types.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !(EVENT_NAMES as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0) {
    throw InvalidRequest.fields([{ field: 'types', message: `unknown event name(s): ${unknown.map((n) => JSON.stringify(n)).join(', ')}; use ${EVENT_NAMES.join(', ')}` }]);
  }
  return [...new Set(names)];
}

function cursorPastTheEnd(retentionDays: number): ApiError {
  return new ApiError(
    HttpStatus.GONE,
    'cursor_expired',
    'This cursor points past the end of the feed (was the database restored from an earlier copy?); start again without `after` and resynchronise.',
    { retention_days: retentionDays },
  );
}
