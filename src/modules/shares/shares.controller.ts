import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../common/auth/access.decorator.js';
import { type Actor, CurrentActor } from '../../common/auth/actor.js';
import type { Page } from '../../common/http/envelope.js';
import { ApiEnvelope, ApiErrors } from '../../common/http/openapi.js';
import { CreateShareCommand } from './commands/create-share.command.js';
import { RevokeShareCommand } from './commands/revoke-share.command.js';
import { CreateShareRequest } from './dto/create-share.request.js';
import { ListSharesRequest } from './dto/list-shares.request.js';
import { RevokedShareResponse, ShareResponse, ShareStatusResponse } from './dto/share.response.js';
import { GetShareQuery } from './queries/get-share.query.js';
import { ListSharesQuery } from './queries/list-shares.query.js';

@ApiTags('Shares')
@Controller('v1/shares')
export class SharesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post()
  @RequireScope('share')
  @ApiOperation({
    operationId: 'createShare',
    summary: 'Create a share link',
    description:
      'A public link (`url`) to an active file. With `password`, visitors must send it in `X-Share-Password`; with `expires_in` ' +
      '(seconds, 60 to 31,536,000) the link answers 410 afterwards. Emits `file.shared`.',
  })
  @ApiEnvelope(ShareResponse, { status: 201 })
  @ApiErrors(
    [400, 'invalid_request: file_id missing; password empty, too long, beginning or ending with a space or holding a control character; expires_in outside 60..31536000.'],
    [403, 'file_infected: the file is quarantined and cannot be shared.'],
    [404, 'not_found: no active file with this id in the account.'],
  )
  create(@CurrentActor() actor: Actor, @Body() body: CreateShareRequest): Promise<ShareResponse> {
    return this.commands.execute(new CreateShareCommand(actor, body.file_id, body.password, body.expires_in));
  }

  @Get()
  @RequireScope('read')
  @ApiOperation({
    operationId: 'listShares',
    summary: 'List share links',
    description: 'The account\'s links, newest first, including revoked, invalidated and expired ones with their analytics; `active` says whether a link works now.',
  })
  @ApiEnvelope(ShareStatusResponse, { list: 'cursor' })
  @ApiErrors([400, 'invalid_request: bad page, per_page or file_id; a cursor together with page, altered, or made for another query.'])
  list(@CurrentActor() actor: Actor, @Query() request: ListSharesRequest): Promise<Page<ShareStatusResponse>> {
    return this.queries.execute(new ListSharesQuery(actor, request));
  }

  @Get(':share_id')
  @RequireScope('read')
  @ApiOperation({
    operationId: 'getShare',
    summary: 'Get a share link',
    description: 'One link of the account with its status and analytics (`access_count`, `last_accessed_at`), as listings show it; revoked, invalidated and expired links included.',
  })
  @ApiEnvelope(ShareStatusResponse)
  @ApiErrors([404, 'not_found: no share link with this id in the account.'])
  get(@CurrentActor() actor: Actor, @Param('share_id') shareId: string): Promise<ShareStatusResponse> {
    return this.queries.execute(new GetShareQuery(actor, shareId));
  }

  @Delete(':share_id')
  @HttpCode(200)
  @RequireScope('share')
  @ApiOperation({ operationId: 'revokeShare', summary: 'Revoke a share link', description: 'The link answers 404 at once. Revoking a revoked link answers 404, like every repeated DELETE.' })
  @ApiEnvelope(RevokedShareResponse)
  @ApiErrors([404, 'not_found: no share link with this id in the account.'])
  revoke(@CurrentActor() actor: Actor, @Param('share_id') shareId: string): Promise<RevokedShareResponse> {
    return this.commands.execute(new RevokeShareCommand(actor, shareId));
  }
}
