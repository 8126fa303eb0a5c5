import { applyDecorators, Controller, Delete, Head, NotFoundException, Options, Patch, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiHeader, ApiOperation, type ApiOperationOptions, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { NotRateLimited } from '../../common/rate-limit/plan-rate-limit.guard.js';
import type { Request, Response } from 'express';
import { Public, RequireScope } from '../../common/auth/access.decorator.js';
import { type Actor, CurrentActor } from '../../common/auth/actor.js';
import { ApiErrors } from '../../common/http/openapi.js';
import { MethodOverrideRoute } from '../../common/idempotency/idempotency.interceptor.js';
import { FILE_ID_HEADER, TusProtocol } from './tus-protocol.js';

const TUS_RESUMABLE = applyDecorators(
  ApiHeader({ name: 'Tus-Resumable', required: true, description: 'The protocol version: `1.0.0`.' }),
  ApiErrors([412, 'invalid_request: the Tus-Resumable header is missing, or names a version other than 1.0.0 (the answer\'s Tus-Version lists the versions spoken).']),
);
const UPLOAD_CHECKSUM = ApiHeader({
  name: 'Upload-Checksum',
  required: false,
  description:
    'tus checksum extension: `<algorithm> <base64 digest>` of this request\'s body, algorithm `md5` or `sha1` (OPTIONS answers them in `Tus-Checksum-Algorithm`). ' +
    'The body is then stored only if it matches (else 460); an unknown algorithm is 400.',
});
/** What X-HTTP-Method-Override may name: the tus requests a POST can stand for. */
const OVERRIDABLE_METHODS = new Set(['PATCH', 'DELETE', 'HEAD']);
/**
 * The bytes of a chunk, as tus sends them. A header parameter named Content-Type is ignored by OpenAPI, so the body
 * is stated here: otherwise a client generated from the document has no way to send it.
 */
// Not @ApiConsumes: BodyMediaTypeInterceptor would then refuse another Content-Type with 415 before tus answers its own 400.
const CHUNK_BODY = (required: boolean, description: string) =>
  ApiOperation({ summary: undefined, requestBody: { required, description, content: { 'application/offset+octet-stream': { schema: { type: 'string', format: 'binary' } } } } } as ApiOperationOptions);
const UPLOAD_ID = ApiParam({ name: 'id', description: 'The upload id (`upl_...`), the last segment of the creation answer\'s Location. A query string on the URL is ignored.' });

/**
 * Resumable uploads (tus 1.0.0): the guards authenticate and count the request as for any route,
 * then @tus/server (TusProtocol) speaks the protocol on the raw request, whose body no parser has read.
 */
/** The tus headers our answers carry, documented once for every tus route. */
const TUS_ANSWER_HEADERS = {
  'Tus-Resumable': { description: 'Always `1.0.0`.', schema: { type: 'string' } },
  'Upload-Offset': { description: 'Bytes received so far.', schema: { type: 'integer' } },
  'Upload-Length': { description: 'The declared size, once known.', schema: { type: 'integer' } },
  'Upload-Expires': { description: 'When the unfinished upload is removed if idle until then (RFC 9110 date); a PATCH moves it on, and its answer names the new time.', schema: { type: 'string' } },
  [FILE_ID_HEADER]: { description: 'The id of the file the completed upload became.', schema: { type: 'string' } },
};

@ApiTags('Resumable uploads')
@Controller('v1/uploads')
export class UploadsController {
  constructor(private readonly tus: TusProtocol) {}

  @Post()
  @RequireScope('write')
  @TUS_RESUMABLE
  @ApiHeader({ name: 'Upload-Length', required: false, description: 'The file size in bytes; or send `Upload-Defer-Length: 1` and declare it on a later PATCH.' })
  @ApiHeader({ name: 'Upload-Defer-Length', required: false, description: '`1` when the size is not known yet.' })
  @UPLOAD_CHECKSUM
  @CHUNK_BODY(false, 'Optional (tus creation-with-upload): the first bytes of the file.')
  @ApiHeader({
    name: 'Upload-Metadata',
    required: true,
    description:
      'Comma-separated `key base64(value)` pairs: `filename` (required), `name` (the file name to use instead), `folder_id` (default: root), ' +
      '`overwrite` (`true`/`false`), with the multipart upload\'s rules, checked here (the name in NFC: at most 255 characters once composed). Other keys are kept and echoed by HEAD.',
  })
  @ApiOperation({
    operationId: 'createUpload',
    summary: 'Create a resumable upload (tus creation, creation-with-upload)',
    description:
      'Checks the metadata, the plan\'s maximum size and the quota as POST /v1/files/upload does, and reserves `Upload-Length` bytes of quota at once. ' +
      'Answers 201 with `Location` (the upload URL) and `Upload-Expires`. A body (`Content-Type: application/offset+octet-stream`) is the first chunk; ' +
      `when it completes the upload, \`${FILE_ID_HEADER}\` names the file. A creation refused for its body (a checksum, more bytes than Upload-Length) ` +
      'answers without `Location` and leaves no upload and no reservation behind.',
  })
  @ApiResponse({
    status: 201,
    description: 'Created; `Location` is the upload URL.',
    headers: {
      Location: { description: 'The upload URL, relative to the API origin (`/v1/uploads/{id}`).', required: true, schema: { type: 'string' } },
      ...TUS_ANSWER_HEADERS,
    },
  })
  @ApiErrors(
    [404, 'not_found: folder_id names no active folder.'],
    [413, 'file_too_large (details file_size, max_size, plan) or storage_exceeded (details current_usage, storage_limit, required_space).'],
    [460, 'invalid_request: the body does not match Upload-Checksum (tus Checksum Mismatch). No upload is left behind: a creation refused for its body gives back what it reserved.'],
  )
  create(@CurrentActor() actor: Actor, @Req() request: Request, @Res() response: Response): Promise<void> {
    return this.tus.handle(actor, request, response);
  }

  @Head(':id')
  @RequireScope('write')
  @TUS_RESUMABLE
  @UPLOAD_ID
  @ApiOperation({
    operationId: 'getUploadOffset',
    summary: 'Where to resume an upload (tus core)',
    description:
      `Answers \`Upload-Offset\` (bytes received), \`Upload-Length\`, \`Upload-Metadata\` and, while unfinished, \`Upload-Expires\`; once complete \`${FILE_ID_HEADER}\` instead. ` +
      'An upload holding every byte whose completion failed (its last PATCH answered 5xx) is completed by this request, which then names the file.',
  })
  @ApiResponse({ status: 200, description: 'The upload\'s state, in headers.', headers: TUS_ANSWER_HEADERS })
  @ApiErrors(
    [404, 'not_found: no such upload of this account (or it was terminated).'],
    [410, 'not_found: the upload expired.'],
    [423, 'conflict: another request is writing to this upload; retry.'],
  )
  offset(@CurrentActor() actor: Actor, @Req() request: Request, @Res() response: Response): Promise<void> {
    return this.tus.handle(actor, request, response);
  }

  @Patch(':id')
  @RequireScope('write')
  // The upload's creation counted; its chunks do not, so the plan's largest file completes in 8 MiB chunks on every plan.
  @NotRateLimited()
  @TUS_RESUMABLE
  @UPLOAD_ID
  @ApiHeader({ name: 'Upload-Offset', required: true, description: 'Where this chunk starts: the offset HEAD answered.' })
  @CHUNK_BODY(true, 'The chunk\'s raw bytes, stored from Upload-Offset on (an empty body changes nothing).')
  @ApiHeader({
    name: 'Upload-Length',
    required: false,
    description:
      'Declares the size of an upload created with Upload-Defer-Length, once: another size later is 400. The same size again (resending the chunk that declared it) is no change.',
  })
  @UPLOAD_CHECKSUM
  @ApiOperation({
    operationId: 'appendToUpload',
    summary: 'Send a chunk (tus core)',
    description:
      'Appends the body at `Upload-Offset`; answers 204 with the new `Upload-Offset`. An empty body changes nothing, except that with `Upload-Length` it declares a deferred length ' +
      '(equal to the offset, that completes the upload). The chunk that completes the upload commits the file as a multipart upload does ' +
      `(MD5, type detection, numbered suffix or overwrite, file.uploaded, scan and thumbnail) and the answer names it in \`${FILE_ID_HEADER}\`. ` +
      'If its folder was deleted while it uploaded, the file goes to the root, under a numbered suffix if its name is taken there (an `overwrite` replaces nothing there). ' +
      'Not counted against the rate limit. A second request to the same upload while one is writing waits up to 3 s, then gets 423.',
  })
  @ApiResponse({ status: 204, description: 'Stored; `Upload-Offset` is the new offset.', headers: TUS_ANSWER_HEADERS })
  @ApiErrors(
    [404, 'not_found: no such upload of this account (or it was terminated).'],
    [410, 'not_found: the upload expired.'],
    [409, 'conflict: Upload-Offset is not the upload\'s offset (ask HEAD).'],
    [413, 'file_too_large: more bytes than the plan allows (details file_size, max_size, plan); storage_exceeded: a deferred-length upload outgrew the quota (details current_usage, storage_limit, required_space); invalid_request: bytes past the upload\'s own Upload-Length (nothing past it stored).'],
    [423, 'conflict: another request is writing to this upload; retry.'],
    [460, 'invalid_request: the chunk does not match Upload-Checksum (tus Checksum Mismatch); nothing of it was stored.'],
  )
  append(@CurrentActor() actor: Actor, @Req() request: Request, @Res() response: Response): Promise<void> {
    return this.tus.handle(actor, request, response);
  }

  @Delete(':id')
  @RequireScope('write')
  @TUS_RESUMABLE
  @UPLOAD_ID
  @ApiOperation({
    operationId: 'terminateUpload',
    summary: 'Terminate an upload (tus termination)',
    description: 'Deletes the bytes received and gives the reserved quota back; answers 204. A completed upload\'s file is not touched.',
  })
  @ApiResponse({ status: 204, description: 'Terminated.' })
  @ApiErrors([404, 'not_found: no such upload of this account.'], [423, 'conflict: another request is writing to this upload; retry.'])
  terminate(@CurrentActor() actor: Actor, @Req() request: Request, @Res() response: Response): Promise<void> {
    return this.tus.handle(actor, request, response);
  }

  @Post(':id')
  @RequireScope('write')
  // Not counted: these are mostly chunks, which are not (see append); the HEAD and DELETE a client sends this way cost
  // no more than a chunk refused for its offset.
  @NotRateLimited()
  @TUS_RESUMABLE
  @UPLOAD_ID
  @MethodOverrideRoute('`PATCH`, `DELETE` or `HEAD`: the request is that one, with its headers and answers.')
  @CHUNK_BODY(false, 'As PATCH: the chunk\'s raw bytes, when the request stands for a PATCH.')
  @ApiOperation({
    operationId: 'overrideUploadMethod',
    summary: 'PATCH, DELETE or HEAD sent as POST (tus core, X-HTTP-Method-Override)',
    description:
      'For clients behind proxies or in environments that cannot send PATCH or DELETE (tus-js-client `overridePatchMethod`): a POST with ' +
      '`X-HTTP-Method-Override` is handled as the method it names, exactly as that route documents. Without the header, or with another method, 404.',
  })
  @ApiResponse({ status: 204, description: 'As the overridden PATCH or DELETE.', headers: TUS_ANSWER_HEADERS })
  @ApiResponse({ status: 200, description: 'As the overridden HEAD.', headers: TUS_ANSWER_HEADERS })
  @ApiErrors(
    [404, 'not_found: no such upload of this account; or no X-HTTP-Method-Override naming PATCH, DELETE or HEAD.'],
    [409, 'conflict: as PATCH.'],
    [410, 'not_found: the upload expired.'],
    [413, 'as PATCH.'],
    [423, 'conflict: as PATCH.'],
    [460, 'invalid_request: as PATCH.'],
  )
  overridden(@CurrentActor() actor: Actor, @Req() request: Request, @Res() response: Response): Promise<void> {
    // tus 1.0 core: "X-HTTP-Method-Override … MUST be interpreted as the request's method". @tus/server 2 no longer reads it.
    const method = String(request.headers['x-http-method-override'] ?? '').toUpperCase();
    if (!OVERRIDABLE_METHODS.has(method)) throw new NotFoundException();
    request.method = method;
    return this.tus.handle(actor, request, response);
  }

  /** Protocol discovery (Tus-Version, Tus-Extension); CORS preflights are answered before routing. */
  @Options()
  @Public({ takesInput: false })
  @NotRateLimited()
  @ApiExcludeEndpoint()
  discover(@Req() request: Request, @Res() response: Response): Promise<void> {
    return this.tus.handle(null, request, response);
  }
}
