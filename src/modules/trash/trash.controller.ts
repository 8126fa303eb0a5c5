import { Controller, Delete, Get, HttpCode, Query, Req } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { RequireScope } from '../../common/auth/access.decorator.js';
import { type Actor, CurrentActor } from '../../common/auth/actor.js';
import { ApiEnvelope, ApiErrors } from '../../common/http/openapi.js';
import { refuseUnexpectedInput } from '../../common/http/request-body.js';
import { EmptyTrashCommand } from './commands/empty-trash.command.js';
import { EmptiedTrashResponse, ListTrashRequest, TrashedFileResponse } from './dto/trash.dto.js';
import { ListTrashQuery } from './queries/list-trash.query.js';

@ApiTags('Trash')
@Controller('v1/trash')
export class TrashController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Get()
  @RequireScope('read')
  @ApiOperation({ operationId: 'listTrash', summary: 'List the trash', description: 'Trashed files still within their recovery window (one whose recoverable_until has passed is gone, even before the purge removes it), sorted by deleted_desc (default) or deleted_asc, ties broken by id; `search` matches names case-insensitively.' })
  @ApiEnvelope(TrashedFileResponse, { list: 'cursor' })
  @ApiErrors([400, 'invalid_request: bad page, per_page, sort or a repeated parameter; a cursor together with page, altered, or made for another query.'])
  list(@CurrentActor() actor: Actor, @Query() request: ListTrashRequest) {
    return this.queries.execute(new ListTrashQuery(actor, request));
  }

  @Delete()
  @HttpCode(200)
  @RequireScope('delete', { elevated: true })
  @ApiOperation({ operationId: 'emptyTrash', summary: 'Empty the trash', description: 'Permanently deletes every trashed file and frees its storage (elevated key).' })
  @ApiEnvelope(EmptiedTrashResponse)
  @ApiErrors([400, 'invalid_request: any query parameter or body field (this route takes none; to delete one trashed file for good, DELETE /v1/files/{id}?permanent=true).'])
  empty(@CurrentActor() actor: Actor, @Query() parameters: Record<string, unknown>, @Req() request: Request): Promise<EmptiedTrashResponse> {
    // Refused rather than ignored: `DELETE /v1/trash?file_id=…` or `{"file_ids": […]}` reads like deleting some files, and would empty the whole trash.
    refuseUnexpectedInput(parameters, request.body);
    return this.commands.execute(new EmptyTrashCommand(actor));
  }
}
