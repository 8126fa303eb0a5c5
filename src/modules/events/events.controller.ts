import { Controller, Get, Query, Res } from '@nestjs/common';
import { QueryBus } from '@nestjs/cqrs';
import { ApiExtraModels, ApiOperation, ApiResponse, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Response } from 'express';
import { RequireScope } from '../../common/auth/access.decorator.js';
import { type Actor, CurrentActor } from '../../common/auth/actor.js';
import type { CursorPage } from '../../common/http/envelope.js';
import { ApiErrors } from '../../common/http/openapi.js';
import { AppConfig } from '../../config/app-config.js';
import { EventResponse } from './dto/event.response.js';
import { ListEventsRequest } from './dto/list-events.request.js';
import { ListEventsQuery } from './queries/list-events.query.js';

@ApiTags('Events')
@Controller('v1/events')
@RequireScope('read')
export class EventsController {
  constructor(
    private readonly queries: QueryBus,
    private readonly config: AppConfig,
  ) {}

  @Get()
  @ApiOperation({
    operationId: 'listEvents',
    summary: 'Event feed',
    description:
      'The account\'s events, oldest first, each as in webhook deliveries plus its stable `id`. Pass `next_cursor` back as `after` to ' +
      'continue; it is always present, so a client can keep polling with it, and no event is skipped or repeated. With `wait`, ' +
      'an answer with no event is held until one arrives (or the deadline). Events are kept EVENT_RETENTION_DAYS (30) days; a cursor ' +
      'from before the retained events answers 410 cursor_expired.',
  })
  @ApiExtraModels(EventResponse)
  @ApiResponse({
    status: 200,
    description: 'Success',
    schema: {
      type: 'object',
      required: ['success', 'data', 'next_cursor'],
      properties: {
        success: { type: 'boolean', enum: [true] },
        data: { type: 'array', items: { $ref: getSchemaPath(EventResponse) } },
        next_cursor: { type: 'string', description: 'Opaque; send it as `after` to read on from here.' },
      },
    },
  })
  @ApiErrors(
    [400, 'invalid_request: a malformed, altered or foreign cursor, an unknown event name in `types`, or limit/wait out of range.'],
    [410, 'cursor_expired: events after this cursor were trimmed (older than the retention), or it points past the end of the feed (the database was restored from an earlier copy); start again without `after`.'],
  )
  list(@CurrentActor() actor: Actor, @Query() request: ListEventsRequest, @Res({ passthrough: true }) response: Response): Promise<CursorPage<EventResponse>> {
    const gone = new AbortController();
    // Fires when the answer is sent or the client hangs up; either way a pending long poll can stop. A client that hung up
    // before the request got here (while its key was checked) has had its close event already. (The request stream is
    // no sign: it is destroyed too once a body sent with it has been read.)
    if (response.destroyed) gone.abort();
    else response.once('close', () => gone.abort());
    this.keepOpenWhileWaiting(response, request.wait);
    return this.queries.execute(new ListEventsQuery(actor, request, gone.signal));
  }

  /**
   * A long poll moves no bytes while it waits, by design: the connection's idle limit (HTTP_IDLE_TIMEOUT_SECONDS, which
   * may be shorter than the 30 s a wait may take) must not cut it off with 408 before its deadline. So its connection
   * gets the wait on top of the limit, and the usual limit again once the answer is sent.
   */
  private keepOpenWhileWaiting(response: Response, waitSeconds: number): void {
    const socket = response.socket;
    const idleMs = this.config.httpIdleTimeoutMs;
    if (!socket || waitSeconds === 0 || response.destroyed) return;
    socket.setTimeout(waitSeconds * 1000 + idleMs);
    response.once('finish', () => socket.setTimeout(idleMs));
  }
}
