import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res, UseInterceptors } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiBody, ApiConsumes, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public, RequireScope } from '../../common/auth/access.decorator.js';
import { type Actor, CurrentActor } from '../../common/auth/actor.js';
import { Clock } from '../../common/clock.js';
import { InvalidRequest } from '../../common/errors/api-error.js';
import { ApiBlobAnswers, ApiEnvelope, ApiErrors } from '../../common/http/openapi.js';
import { refuseUnexpectedInput } from '../../common/http/request-body.js';
import { sendBlob } from '../../infra/storage/blob-response.js';
import { BlobStorage } from '../../infra/storage/blob-storage.js';
import { CONTENT_ARRIVING_ANSWER, FileContentResponse } from './file-content-response.js';
import { BulkDeleteFilesCommand } from './commands/bulk-delete-files.command.js';
import { DeleteFileCommand } from './commands/delete-file.command.js';
import { RestoreFileCommand } from './commands/restore-file.command.js';
import { UpdateFileCommand } from './commands/update-file.command.js';
import { UploadFileCommand } from './commands/upload-file.command.js';
import { FileResponse } from './dto/file.response.js';
import { NAME_CONFLICT, RENAME_CONFLICT } from './name-collisions.js';
import { BulkDeleteRequest, DeleteFileRequest, ListFilesRequest, parseOverwrite, SignedUrlRequest, UpdateFileRequest, UploadFileForm, UploadFileRequest } from './dto/file.requests.js';
import { BulkDeleteResponse, DeletedFileResponse, RestoredFileResponse } from './dto/file-removal.responses.js';
import { GetFileQuery } from './queries/get-file.query.js';
import { type BlobKind, GetFileBlobQuery } from './queries/get-file-blob.query.js';
import { ListFilesQuery } from './queries/list-files.query.js';
import { UploadInterceptor } from './upload/upload.interceptor.js';

@ApiTags('Files')
@Controller('v1/files')
export class FilesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
  ) {}

  @Get()
  @RequireScope('read')
  @ApiOperation({
    operationId: 'listFiles',
    summary: 'List files',
    description:
      'Active files of one folder (the root when folder_id is omitted), one page. `search` is a case-insensitive substring of the name; ' +
      'every sort breaks ties by id. Trashed and quarantined files are not listed.',
  })
  @ApiEnvelope(FileResponse, { list: 'cursor' })
  @ApiErrors([400, 'invalid_request: bad page, per_page, sort, type or a repeated parameter; a cursor together with page, altered, or made for another query.'], [404, 'not_found: no such active folder.'])
  list(@CurrentActor() actor: Actor, @Query() request: ListFilesRequest) {
    return this.queries.execute(new ListFilesQuery(actor, request));
  }

  @Post('upload')
  @HttpCode(200)
  @RequireScope('write')
  @UseInterceptors(UploadInterceptor)
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: UploadFileForm })
  @ApiOperation({
    operationId: 'uploadFile',
    summary: 'Upload a file',
    description:
      'Streams the file to storage while hashing it. The plan maximum size is enforced while streaming (and at once from Content-Length); ' +
      'quota is reserved atomically. A taken name gets a numbered suffix (`report (1).pdf`) unless overwrite=true replaces the same-named file ' +
      '(same id and created_at, new modified_at); only its net change has to fit the quota (send overwrite and name before the file part). ' +
      'Without a name field the name is the part\'s filename (an RFC 5987 filename* wins) without any directory before it (after / or \\). A part\'s Content-Transfer-Encoding is ignored. The body is read as sent: any Content-Encoding but identity is 415. ' +
      'Fields sent before the file part are judged when it begins (400 or 404 before its bytes are read). ' +
      'The type comes from the content, then the extension.',
  })
  @ApiEnvelope(FileResponse)
  @ApiErrors(
    [400, 'invalid_request: no file part, a bad name or field, a field given twice or in a charset the service cannot decode, or a multipart body that cannot be read.'],
    [404, 'not_found: folder_id names no active folder.'],
    [413, 'file_too_large (details file_size, max_size, plan) or storage_exceeded (details current_usage, storage_limit, required_space).'],
    NAME_CONFLICT,
  )
  upload(@CurrentActor() actor: Actor, @Req() request: Request, @Body() body: UploadFileRequest): Promise<FileResponse> {
    const upload = request.upload;
    if (!upload) throw InvalidRequest.fields([{ field: 'file', message: 'a file part named "file" is required' }]);
    const overwrite = parseOverwrite(body.overwrite);
    return this.commands.execute(new UploadFileCommand(actor, upload, body.name ?? upload.originalname ?? '', body.folder_id ?? null, overwrite));
  }

  @Post('bulk-delete')
  @HttpCode(200)
  @RequireScope('delete')
  @ApiOperation({
    operationId: 'bulkDeleteFiles',
    summary: 'Move several files to the trash',
    description: 'Ids are processed in order; each one that cannot be deleted is listed in `failed` (a repeated id fails the second time). total = deleted_count + failed_count.',
  })
  @ApiEnvelope(BulkDeleteResponse)
  @ApiErrors([400, 'invalid_request: file_ids missing, empty or longer than 1000.'])
  bulkDelete(@CurrentActor() actor: Actor, @Body() body: BulkDeleteRequest): Promise<BulkDeleteResponse> {
    return this.commands.execute(new BulkDeleteFilesCommand(actor, body.file_ids));
  }

  @Get(':file_id')
  @RequireScope('read')
  @ApiOperation({ operationId: 'getFile', summary: 'Get a file', description: 'One active file, with is_shared and md5_hash.' })
  @ApiEnvelope(FileResponse)
  @ApiErrors([404, 'not_found: no active file with this id in the account.'])
  get(@CurrentActor() actor: Actor, @Param('file_id') fileId: string): Promise<FileResponse> {
    return this.queries.execute(new GetFileQuery(actor, fileId));
  }

  @Patch(':file_id')
  @RequireScope('write')
  @ApiOperation({ operationId: 'updateFile', summary: 'Rename and/or move a file', description: '`folder_id: null` moves it to the root. A name taken in the target folder gets a numbered suffix. modified_at is updated; a PATCH that changes nothing (an empty body, the same name and folder) answers the file as it is.' })
  @ApiEnvelope(FileResponse)
  @ApiErrors([400, 'invalid_request: an illegal name, or any query parameter (name and folder_id go in the body).'], [404, 'not_found: no such active file or target folder.'], RENAME_CONFLICT)
  update(@CurrentActor() actor: Actor, @Param('file_id') fileId: string, @Body() body: UpdateFileRequest, @Query() parameters: Record<string, unknown>): Promise<FileResponse> {
    // Refused rather than ignored: `PATCH …?name=…` would answer 200 and rename nothing.
    refuseUnexpectedInput(parameters, undefined);
    return this.commands.execute(new UpdateFileCommand(actor, fileId, body.name, body.folder_id));
  }

  @Delete(':file_id')
  @HttpCode(200)
  @RequireScope('delete')
  @ApiOperation({
    operationId: 'deleteFile',
    summary: 'Delete a file',
    description:
      'Moves the file to the trash (recoverable until deleted_at + TRASH_RETENTION_DAYS); its share links stop working at once. ' +
      'With permanent=true (elevated key) the file, also one already in the trash, is deleted for good and its storage freed; recoverable_until is null.',
  })
  @ApiEnvelope(DeletedFileResponse)
  @ApiErrors([400, 'invalid_request: permanent is not true or false, or a body field (permanent goes in the query).'], [404, 'not_found: no such file, or it is already deleted.'])
  delete(@CurrentActor() actor: Actor, @Param('file_id') fileId: string, @Query() query: DeleteFileRequest, @Req() request: Request): Promise<DeletedFileResponse> {
    // Refused rather than ignored: `{"permanent": true}` in the body would move the file to the trash instead.
    refuseUnexpectedInput({}, request.body);
    return this.commands.execute(new DeleteFileCommand(actor, fileId, query.permanent === 'true'));
  }

  @Post(':file_id/restore')
  @HttpCode(200)
  @RequireScope('write')
  @ApiOperation({
    operationId: 'restoreFile',
    summary: 'Restore a file from the trash',
    description: 'Back into its folder, or the root when that folder is gone (folder_id null). A taken name gets a numbered suffix. Share links are not restored.',
  })
  @ApiEnvelope(RestoredFileResponse)
  @ApiErrors(
    [400, 'invalid_request: any query parameter or body field (this route takes none: a file goes back where it was, or to the root).'],
    [404, 'not_found: the file is not in the trash (or its recovery window has passed).'],
    NAME_CONFLICT,
  )
  restore(@CurrentActor() actor: Actor, @Param('file_id') fileId: string, @Query() parameters: Record<string, unknown>, @Req() request: Request): Promise<RestoredFileResponse> {
    // Refused rather than ignored: `?folder_id=` or `{"folder_id": …}` reads like restoring into that folder, which a restore does not do.
    refuseUnexpectedInput(parameters, request.body);
    return this.commands.execute(new RestoreFileCommand(actor, fileId));
  }
}

/** Signed links: no API key, limited per client IP. */
@ApiTags('Files')
@Controller('v1/files')
export class FileDownloadsController {
  constructor(
    private readonly queries: QueryBus,
    private readonly storage: BlobStorage,
    private readonly content: FileContentResponse,
    private readonly clock: Clock,
  ) {}

  @Get(':file_id/download')
  @Public()
  @ApiOperation({
    operationId: 'downloadFile',
    summary: 'Download a file (signed link)',
    description:
      'The `download_url` of a File object: no API key needed, valid one hour. Supports Range (206, 416), ETag (the MD5) with If-None-Match, or Last-Modified with If-Modified-Since (304) ' +
      'and If-Match or If-Unmodified-Since (412 once the file is another version), ' +
      'If-Range (the ETag, or the Last-Modified date once it is a strong validator, a second or more before the answer\'s Date; otherwise the whole file) ' +
      'and HEAD, and sends Content-Disposition: attachment with the file name. The link takes expires and signature only, each once: any other query parameter is 400.',
  })
  @ApiParam({ name: 'file_id' })
  @ApiBlobAnswers()
  @ApiErrors(
    [403, 'permission_denied: the signature is wrong or the link expired; file_infected: the file is quarantined.'],
    [404, 'not_found: the file is gone or in the trash.'],
    [429, 'rate_limit_exceeded: too many requests from this address.'],
    CONTENT_ARRIVING_ANSWER,
  )
  download(@Param('file_id') fileId: string, @Query() query: SignedUrlRequest, @Req() request: Request, @Res() response: Response): Promise<void> {
    return this.send('content', fileId, query, request, response);
  }

  @Get(':file_id/thumbnail')
  @Public()
  @ApiOperation({
    operationId: 'getFileThumbnail',
    summary: 'A file thumbnail (signed link)',
    description: 'The `thumbnail_url` of a File object: a WebP image, inline, signed like downloads and answered like them (ETag, Range, HEAD).',
  })
  @ApiParam({ name: 'file_id' })
  @ApiBlobAnswers('image/webp')
  @ApiErrors(
    [403, 'permission_denied: the signature is wrong or the link expired; file_infected: the file is quarantined.'],
    [404, 'not_found: no such active file or it has no thumbnail.'],
    [429, 'rate_limit_exceeded: too many requests from this address.'],
  )
  thumbnail(@Param('file_id') fileId: string, @Query() query: SignedUrlRequest, @Req() request: Request, @Res() response: Response): Promise<void> {
    return this.send('thumbnail', fileId, query, request, response);
  }

  private async send(kind: BlobKind, fileId: string, query: SignedUrlRequest, request: Request, response: Response): Promise<void> {
    const blob = await this.queries.execute(new GetFileBlobQuery(fileId, kind, query.expires, query.signature));
    if (kind === 'content') await this.content.send(request, response, fileId, blob, this.clock.now());
    else await sendBlob(request, response, this.storage, blob, this.clock.now());
  }
}
