import { HttpStatus, Injectable } from '@nestjs/common';
import { EXPOSED_API_HEADERS } from '../../common/http/cors.js';
import { CommandBus } from '@nestjs/cqrs';
import { Server, type ServerOptions } from '@tus/server';
import { ERRORS, TUS_VERSION } from '@tus/utils';
import type { Request, Response } from 'express';
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import { NodeRequest, sendNodeResponse } from 'srvx/node';
import type { Actor } from '../../common/auth/actor.js';
import { ApiError, type ErrorCode, InvalidRequest, NotFound } from '../../common/errors/api-error.js';
import { ApiExceptionFilter } from '../../common/http/api-exception.filter.js';
import { mediaTypeOf } from '../../common/http/request-body.js';
import { newId } from '../../common/ids.js';
import { Transactions } from '../../infra/database/transactions.js';
import { CompleteResumableUploadCommand } from './commands/complete-resumable-upload.command.js';
import { CreateResumableUploadCommand } from './commands/create-resumable-upload.command.js';
import { RedisUploadLocker } from './redis-upload-locker.js';
import { ResumableUploadEntity } from './resumable-upload.entity.js';
import { ResumableUploadStore } from './resumable-upload.store.js';
import { type TusRequest, tusActor, tusRequests } from './tus-request.js';
import { CHECKSUM_ALGORITHMS, parseUploadChecksum } from './upload-checksum.js';

export const UPLOADS_PATH = '/v1/uploads';

/** The media type of a tus body (a PATCH's, or a creation's first bytes). */
const TUS_BODY_TYPE = 'application/offset+octet-stream';

/** Names the file a completed upload became, on its last PATCH (or POST) and on HEAD afterwards. */
export const FILE_ID_HEADER = 'X-File-Id';

/** Request headers of the tus protocol a browser must be allowed to send (CORS). */
export const TUS_REQUEST_HEADERS = [
  'Tus-Resumable',
  'Upload-Length',
  'Upload-Defer-Length',
  'Upload-Metadata',
  'Upload-Offset',
  'Upload-Concat',
  'Upload-Checksum',
  'X-HTTP-Method-Override',
  'X-Requested-With',
];
/** Response headers of the tus protocol a browser script must be able to read (CORS). */
export const TUS_RESPONSE_HEADERS = ['Location', 'Tus-Resumable', 'Tus-Version', 'Tus-Extension', 'Tus-Max-Size', 'Tus-Checksum-Algorithm', 'Upload-Offset', 'Upload-Length', 'Upload-Expires', 'Upload-Metadata', FILE_ID_HEADER];

/** An OPTIONS request to the uploads that is not a CORS preflight: tus protocol discovery. */
export function isTusDiscovery(request: Request): boolean {
  return request.method === 'OPTIONS' && request.path.startsWith(UPLOADS_PATH) && !request.headers['access-control-request-method'];
}

/** @tus/server's errors, as our error codes; the status stays the protocol's, except where REFUSALS says. */
const CODE_BY_TUS_STATUS: Record<number, ErrorCode> = { 404: 'not_found', 410: 'not_found', 409: 'conflict', 423: 'conflict' };

/**
 * @tus/server's refusals that our envelope answers otherwise than with its status and text:
 *  - a missing Upload-Offset or Content-Type is a malformed request (400), not the 403 `permission_denied` stands for;
 *  - its 413 is only ever "upload's size exceeded" (bytes past the upload's own Upload-Length: it has no maximum of its
 *    own here), not the plan's limit that `file_too_large` and its details (file_size, max_size, plan) name;
 *  - its INVALID_LENGTH text names only one of the cases it covers;
 *  - an extension the server does not offer (concatenation) is the client's to avoid: 400, never a 5xx.
 */
const PAST_THE_LENGTH = {
  status: 413,
  message: "The request's bytes run past the upload's Upload-Length; nothing past it was stored. HEAD answers the offset to resume from.",
};
const REFUSALS = new Map<unknown, { status: number; message: string }>([
  [ERRORS.ERR_SIZE_EXCEEDED, PAST_THE_LENGTH],
  [ERRORS.MISSING_OFFSET, { status: 400, message: 'A PATCH needs Upload-Offset: the offset HEAD answers.' }],
  [ERRORS.INVALID_CONTENT_TYPE, { status: 400, message: 'A PATCH needs Content-Type: application/offset+octet-stream.' }],
  [
    ERRORS.INVALID_LENGTH,
    {
      status: 400,
      message:
        'Send exactly one of Upload-Length and Upload-Defer-Length: 1 when creating an upload; a deferred length, declared later with Upload-Length, ' +
        'is declared once and is not below the bytes already received.',
    },
  ],
  [
    ERRORS.UNSUPPORTED_CONCATENATION_EXTENSION,
    { status: 400, message: 'Upload-Concat: this server does not offer the concatenation extension (Tus-Extension lists those it does); send the file as one upload.' },
  ],
]);

/**
 * What a valid value of each header @tus/server validates looks like, for the `details.fields` of its refusal (it
 * answers only "Invalid <names>"). A Tus-Resumable it does not speak is 412 instead (EnvelopedTusServer.write).
 */
const TUS_HEADER_RULES: Record<string, string> = {
  'upload-offset': 'must be a whole number of bytes: the offset HEAD answers',
  'upload-length': 'must be a whole number of bytes',
  'upload-defer-length': 'must be 1',
  'upload-metadata': 'must be comma-separated "key base64(value)" pairs, each key once',
  'content-type': 'must be application/offset+octet-stream on a PATCH',
  'upload-concat': 'is not offered by this server (the concatenation extension is not in Tus-Extension)',
  'x-forwarded-proto': 'must be http or https',
  'tus-version': 'must be a version of the protocol, such as 1.0.0',
};
/** "Invalid upload-offset content-type": the names of the headers @tus/server refused. */
const INVALID_HEADERS = /^Invalid ((?:[a-z0-9-]+ ?)+)\s*$/;

/** `upload-offset` as it is written in documentation and in the field of an error: `Upload-Offset`. */
const headerName = (name: string) => name.replace(/(^|-)([a-z])/g, (_match, dash: string, letter: string) => dash + letter.toUpperCase());

/**
 * The tus 1.0 protocol at /v1/uploads: @tus/server with our store, our cross-process lock and
 * hooks that run our commands. Creation checks and reserves like the multipart upload; the last
 * byte commits through the multipart upload's own commit. Errors leave as our JSON envelope.
 */
@Injectable()
export class TusProtocol {
  private readonly server: EnvelopedTusServer;
  private readonly errors = new ApiExceptionFilter();

  constructor(
    commands: CommandBus,
    private readonly store: ResumableUploadStore,
    locker: RedisUploadLocker,
    private readonly transactions: Transactions,
  ) {
    const options: ServerOptions & { datastore: ResumableUploadStore } = {
      path: UPLOADS_PATH,
      datastore: store,
      locker,
      // Relative (`/v1/uploads/<id>`): clients resolve it against the address they used, whatever proxy is in between.
      relativeLocation: true,
      namingFunction: () => newId('upl'),
      // The route's `{id}`, as Express decoded it: @tus/server would take the last segment of the whole URL, query string
      // included (`/v1/uploads/upl_1?t=2` is "upl_1?t=2", not found). A NUL byte names no upload (PostgreSQL cannot compare it).
      getFileIdFromRequest: () => {
        const id = tusRequests.getStore()?.request.params.id;
        return typeof id === 'string' && id !== '' && !id.includes('\0') ? id : undefined;
      },
      // No limit here: creation checks Upload-Length, and the store holds a deferred length to the plan and the quota, with our errors.
      maxSize: 0,
      exposedHeaders: [...TUS_RESPONSE_HEADERS, ...EXPOSED_API_HEADERS],
      onIncomingRequest: async (req, uploadId) => {
        if (req.method === 'POST') return;
        const upload = await this.assertOwnUpload(tusActor(), uploadId);
        // A length is declared once, and then never changes. The same length sent again is a client resending the chunk
        // that declared it (cut off, or refused for its checksum), as tus-js-client does: no change, as tusd takes it too;
        // @tus/server alone would refuse it for good, and the upload could never complete.
        if (req.method === 'PATCH' && upload.length !== null && req.headers.get('upload-length') === String(upload.length)) req.headers.delete('upload-length');
        let fileId = upload.fileId;
        // Every byte in but no file (the last PATCH's completion failed, or still runs): a HEAD completes it (or waits
        // for it), so a client resuming by HEAD learns the file instead of a full offset with nothing behind it.
        if (!fileId && req.method === 'HEAD' && upload.length !== null && (await store.getUpload(uploadId)).offset === upload.length) {
          fileId = await commands.execute(new CompleteResumableUploadCommand(tusActor(), uploadId));
        }
        if (fileId) tusRequests.getStore()?.response.setHeader(FILE_ID_HEADER, fileId);
        else if (req.method === 'HEAD') tusRequests.getStore()!.expiresAt = upload.expiresAt;
      },
      onUploadCreate: async (_req, upload) => {
        const context = tusRequests.getStore()!;
        // A malformed checksum of the first bytes is refused before anything is reserved.
        parseUploadChecksum(context.request.headers['upload-checksum']);
        await commands.execute(new CreateResumableUploadCommand(tusActor(), upload.id, upload.size ?? null, upload.metadata));
        context.createdUploadId = upload.id;
        return {};
      },
      onUploadFinish: async (_req, upload) => {
        const fileId = await commands.execute(new CompleteResumableUploadCommand(tusActor(), upload.id));
        return { headers: { [FILE_ID_HEADER]: fileId } };
      },
      onResponseError: async (_req, error) => {
        // A creation whose first bytes were refused (a checksum, a length) answers without Location: its client can
        // never reach the upload, so nothing may stay reserved for it until it expires.
        const created = tusRequests.getStore()?.createdUploadId;
        if (created) await store.forget(created);
        return this.renderError(error);
      },
    };
    this.server = new EnvelopedTusServer(options, (error) => this.renderError(error));
  }

  /** Handles one tus request; the guards have authenticated `actor` (null for OPTIONS). */
  async handle(actor: Actor | null, request: Request, response: Response): Promise<void> {
    // The checksum extension's discovery header, which @tus/server does not send by itself.
    if (request.method === 'OPTIONS') response.setHeader('Tus-Checksum-Algorithm', CHECKSUM_ALGORITHMS.join(','));
    const context: TusRequest = { actor, request, response };
    await tusRequests.run(context, () => this.server.handle(request, response));
    // A creation whose client hung up before its first bytes were all sent never learned where its upload is (and its
    // Idempotency-Key is freed for the retry): nothing may stay reserved for it until it expires.
    const created = context.createdUploadId;
    if (created && !request.complete && request.socket.destroyed) await tusRequests.run(context, () => this.store.forget(created));
  }

  /** The caller's upload, or not_found: another account's upload does not exist for them. */
  async assertOwnUpload(actor: Actor, uploadId: string): Promise<ResumableUploadEntity> {
    const upload = await this.transactions.dataSource.getRepository(ResumableUploadEntity).findOneBy({ id: uploadId, accountId: actor.accountId });
    if (!upload) throw new NotFound('upload', uploadId);
    return upload;
  }

  /** Our envelope for whatever a tus request failed with: our ApiErrors, @tus/server's `{status_code, body}`, or a bug. */
  private renderError(error: Error | { status_code: number; body: string }): { status_code: number; body: string } {
    const context = tusRequests.getStore();
    if (!context) return { status_code: HttpStatus.INTERNAL_SERVER_ERROR, body: 'internal_error\n' };
    const known = error instanceof ApiError ? error : asApiError(error);
    const { status, body, headers } = this.errors.render(known ?? error, context.request);
    for (const [name, value] of Object.entries(headers)) context.response.setHeader(name, value);
    return { status_code: status, body: JSON.stringify(body) };
  }
}

/**
 * @tus/server answering every error with our JSON envelope: those that went through
 * onResponseError already are, and the few it answers by itself (a missing Tus-Resumable, an
 * invalid header) are wrapped here; either way the body is declared as JSON.
 *
 * It also leaves the request body to our store: @tus/server would turn the Node request into a web
 * stream and back into a Node stream, about a tenth of the CPU of an upload and four times its
 * garbage collections (docs/bench.md, scenario 8). Without a body it hands the store an empty
 * stream, and the store reads the request itself (tusRequestBody).
 */
class EnvelopedTusServer extends Server {
  constructor(
    options: ConstructorParameters<typeof Server>[0],
    private readonly renderError: (error: ApiError | { status_code: number; body: string }) => { status_code: number; body: string },
  ) {
    super(options);
  }

  /** As Server.handle, with the same Node adapter (srvx), minus the body. */
  override async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const request = new NodeRequest({ req, res });
    Object.defineProperty(request, 'body', { value: null });
    // @tus/server compares Content-Type with its exact string, refusing a PATCH (and ignoring a creation's body) in
    // another letter case or with parameters; media types are case-insensitive and may carry parameters (RFC 9110 8.3.1).
    const contentType = req.headers['content-type'];
    if (contentType !== undefined && contentType !== TUS_BODY_TYPE && mediaTypeOf(contentType) === TUS_BODY_TYPE) {
      const headers = new Headers(request.headers);
      headers.set('content-type', TUS_BODY_TYPE);
      Object.defineProperty(request, 'headers', { value: headers });
    }
    const answer = await this.handleWeb(request as unknown as globalThis.Request);
    // Upload-Expires as stored: @tus/server sends none on HEAD, and on a PATCH dates it from the upload as it was before
    // the PATCH, whose end starts the idle period again (an upload idle for 23 hours would say it expires in one).
    const expiresAt = tusRequests.getStore()?.expiresAt;
    if (expiresAt && answer.ok && (req.method === 'HEAD' || answer.headers.has('Upload-Expires'))) answer.headers.set('Upload-Expires', expiresAt.toUTCString());
    // @tus/server's answers carry no status text, which Node would send as an empty reason phrase ("HTTP/1.1 204 ").
    const { status, body, headers } = answer;
    return sendNodeResponse(res, answer.statusText ? answer : new globalThis.Response(body, { status, statusText: STATUS_CODES[status], headers }));
  }

  override async write(context: Parameters<Server['write']>[0], headers: Headers, status: number, body = ''): ReturnType<Server['write']> {
    if (status < 400) return super.write(context, headers, status, body);
    // @tus/server answers a Tus-Resumable it does not speak as an invalid header (400); tus 1.0 wants 412 and the
    // versions it does speak in Tus-Version, so that a client can tell "wrong version" from a malformed request.
    const version = tusRequests.getStore()?.request.headers['tus-resumable'];
    if (status === 400 && typeof version === 'string' && !(TUS_VERSION as readonly string[]).includes(version)) {
      status = HttpStatus.PRECONDITION_FAILED;
      body = `Tus-Resumable ${version.slice(0, 20)} is not supported: this server speaks tus ${TUS_VERSION.join(', ')} (Tus-Version)`;
    } else if (status === HttpStatus.PRECONDITION_FAILED) {
      // Its own 412 (no Tus-Resumable, or an empty one) says only "Tus-Resumable Required", and names no version.
      body = `Every tus request but OPTIONS needs Tus-Resumable: ${TUS_VERSION[0]} (Tus-Version lists the versions this server speaks)`;
    }
    // Whichever the version was, or none: a 412 names those spoken.
    if (status === HttpStatus.PRECONDITION_FAILED) headers.set('Tus-Version', TUS_VERSION.join(','));
    const invalid = status === 400 ? INVALID_HEADERS.exec(body) : null;
    // A validation failure, so its fields are named as every other route names them (details.fields).
    const error = invalid
      ? InvalidRequest.fields(invalid[1].trim().split(' ').map((name) => ({ field: headerName(name), message: TUS_HEADER_RULES[name] ?? 'is not a valid value' })))
      : { status_code: status, body };
    const enveloped = body.startsWith('{') ? body : this.renderError(error).body;
    headers.set('Content-Type', 'application/json; charset=utf-8');
    return super.write(context, headers, status, enveloped);
  }
}

/** @tus/server's protocol errors carry a status and a plain-text body. */
function asApiError(error: unknown): ApiError | null {
  if (typeof error !== 'object' || error === null || !('status_code' in error) || !('body' in error)) return null;
  const { status_code: status, body } = error as { status_code: number; body: string };
  // Every 413 of @tus/server's is past the length: the StreamLimiter holding a chunked body to it throws its own object.
  const refusal = REFUSALS.get(error) ?? (status === 413 ? PAST_THE_LENGTH : undefined);
  if (refusal) return new ApiError(refusal.status, 'invalid_request', refusal.message);
  if (status >= 500) return null;
  return new ApiError(status, CODE_BY_TUS_STATUS[status] ?? 'invalid_request', String(body).trim().replace(/\.?$/, '.'));
}
