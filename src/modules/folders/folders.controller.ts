import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { RequireScope } from '../../common/auth/access.decorator.js';
import { type Actor, CurrentActor } from '../../common/auth/actor.js';
import { ApiEnvelope, ApiErrors } from '../../common/http/openapi.js';
import { refuseUnexpectedInput } from '../../common/http/request-body.js';
import { NAME_CONFLICT, RENAME_CONFLICT } from '../files/name-collisions.js';
import { CreateFolderCommand } from './commands/create-folder.command.js';
import { DeleteFolderCommand } from './commands/delete-folder.command.js';
import { UpdateFolderCommand } from './commands/update-folder.command.js';
import { CreateFolderRequest, DeletedFolderResponse, FolderResponse, ListFoldersRequest, UpdateFolderRequest } from './dto/folder.dto.js';
import { GetFolderQuery } from './queries/get-folder.query.js';
import { ListFoldersQuery } from './queries/list-folders.query.js';

@ApiTags('Folders')
@Controller('v1/folders')
export class FoldersController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Post()
  @RequireScope('write')
  @ApiOperation({ operationId: 'createFolder', summary: 'Create a folder', description: 'In parent_id, or the root. A sibling name taken (case-insensitively) gets a numbered suffix at the end of the name: `Photos (1)`, `Project.v2 (1)`. Emits folder.created.' })
  @ApiEnvelope(FolderResponse, { status: 201 })
  @ApiErrors([400, 'invalid_request: an illegal name, or any query parameter (parent_id goes in the body).'], [404, 'not_found: parent_id names no active folder.'], NAME_CONFLICT)
  create(@CurrentActor() actor: Actor, @Body() body: CreateFolderRequest, @Query() parameters: Record<string, unknown>): Promise<FolderResponse> {
    // Refused rather than ignored: `POST /v1/folders?parent_id=…` would create the folder in the root.
    refuseUnexpectedInput(parameters, undefined);
    return this.commands.execute(new CreateFolderCommand(actor, body.name, body.parent_id ?? null));
  }

  @Get()
  @RequireScope('read')
  @ApiOperation({ operationId: 'listFolders', summary: 'List folders', description: 'Subfolders of parent_id (the root when omitted), paginated like files; sort name_asc by default.' })
  @ApiEnvelope(FolderResponse, { list: 'cursor' })
  @ApiErrors([400, 'invalid_request: bad page, per_page, sort or a repeated parameter; a cursor together with page, altered, or made for another query.'], [404, 'not_found: no such active parent folder.'])
  list(@CurrentActor() actor: Actor, @Query() request: ListFoldersRequest) {
    return this.queries.execute(new ListFoldersQuery(actor, request));
  }

  @Get(':folder_id')
  @RequireScope('read')
  @ApiOperation({ operationId: 'getFolder', summary: 'Get a folder', description: 'One active folder. Walking `parent_id` up to null gives its path from the root.' })
  @ApiEnvelope(FolderResponse)
  @ApiErrors([400, 'invalid_request: any query parameter (this route takes none).'], [404, 'not_found: no active folder with this id in the account.'])
  get(@CurrentActor() actor: Actor, @Param('folder_id') folderId: string, @Query() parameters: Record<string, unknown>): Promise<FolderResponse> {
    refuseUnexpectedInput(parameters, undefined);
    return this.queries.execute(new GetFolderQuery(actor, folderId));
  }

  @Patch(':folder_id')
  @RequireScope('write')
  @ApiOperation({ operationId: 'updateFolder', summary: 'Rename and/or move a folder', description: '`parent_id: null` moves it to the root. A folder cannot move into itself or a descendant. modified_at is updated; a PATCH that changes nothing (an empty body, the same name and parent) answers the folder as it is.' })
  @ApiEnvelope(FolderResponse)
  @ApiErrors([400, 'invalid_request: an illegal name, a move into itself or a descendant, or any query parameter (name and parent_id go in the body).'], [404, 'not_found: no such active folder or parent.'], RENAME_CONFLICT)
  update(@CurrentActor() actor: Actor, @Param('folder_id') folderId: string, @Body() body: UpdateFolderRequest, @Query() parameters: Record<string, unknown>): Promise<FolderResponse> {
    // Refused rather than ignored: `PATCH …?parent_id=…` would answer 200 and move nothing.
    refuseUnexpectedInput(parameters, undefined);
    return this.commands.execute(new UpdateFolderCommand(actor, folderId, body.name, body.parent_id));
  }

  @Delete(':folder_id')
  @HttpCode(200)
  @RequireScope('delete')
  @ApiOperation({ operationId: 'deleteFolder', summary: 'Delete a folder', description: 'Moves the folder and everything in it, recursively, to the trash. Its files can be restored (into the root) within the recovery window.' })
  @ApiEnvelope(DeletedFolderResponse)
  @ApiErrors([400, 'invalid_request: any query parameter or body field (this route takes none: there is no permanent folder deletion).'], [404, 'not_found: no such active folder.'])
  delete(@CurrentActor() actor: Actor, @Param('folder_id') folderId: string, @Query() parameters: Record<string, unknown>, @Req() request: Request): Promise<DeletedFolderResponse> {
    // Refused rather than ignored: `?permanent=true` (as files take) or `?recursive=false` would still move the whole tree to the trash.
    refuseUnexpectedInput(parameters, request.body);
    return this.commands.execute(new DeleteFolderCommand(actor, folderId));
  }
}
