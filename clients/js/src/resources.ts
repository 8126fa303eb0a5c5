import { ConnectionError, InvalidRequestError, NotFoundError, TimeoutError } from './errors.js';
import type { CallOptions, HttpClient } from './http.js';
import { fetchCursorPage, fetchPage, paginate, paginateByCursor } from './pagination.js';
import { createUpload, deleteUpload, sendUpload, uploadState } from './tus.js';
import { type OpenedSource, type UploadProgress, type UploadSource, multipartBody, openSource } from './upload-source.js';
import type {
  ApiKey,
  BodyOf,
  BulkDeleteResult,
  CreatedApiKey,
  CreatedWebhook,
  DeletedFile,
  DeletedFolder,
  DeletedWebhook,
  RotatedWebhookSecret,
  EmptiedTrash,
  EventPage,
  FeedEvent,
  FileObject,
  Folder,
  CursorPage,
  Page,
  PublicShare,
  QueryOf,
  ReplayQueued,
  RestoredFile,
  RevokedApiKey,
  RevokedShare,
  Share,
  ShareStatus,
  TrashedFile,
  UserInfo,
  Webhook,
  WebhookDelivery,
} from './types.js';

/** Options of a POST: its Idempotency-Key is generated unless given (give one to retry across process restarts). */
export interface PostOptions extends CallOptions {
  idempotencyKey?: string;
}

export interface UploadOptions extends PostOptions {
  /** The file name to store; defaults to the path's base name or the File's name (required for buffers and streams). */
  name?: string;
  folderId?: string;
  /** Replace the active file of the same name in the folder instead of adding a numbered copy. */
  overwrite?: boolean;
  onProgress?: (progress: UploadProgress) => void;
  /** Overrides the client's `resumableThresholdBytes` for this upload. */
  resumableThresholdBytes?: number;
}

/** A part of a file's content: bytes `start` to `end` inclusive (to the end when `end` is absent), or with a negative `start` and no `end`, the last `-start` bytes. */
export interface ByteRangeOptions {
  start?: number;
  end?: number;
}

/** The Range header of a ByteRangeOptions; none for the whole file. Answered 206 with Content-Range, or 416 beyond the end. */
function rangeHeader({ start, end }: ByteRangeOptions): Record<string, string> {
  if (start === undefined && end === undefined) return {};
  const whole = (n: number | undefined) => n === undefined || Number.isSafeInteger(n);
  const problem =
    !whole(start) || !whole(end)
      ? 'start and end must be whole numbers of bytes'
      : start !== undefined && start < 0
        ? end !== undefined ? 'a negative start (the last bytes) takes no end' : null
        : end !== undefined && end < (start ?? 0) ? 'end must not come before start' : null;
  if (problem) throw invalidField('range', problem);
  return { Range: start !== undefined && start < 0 ? `bytes=${start}` : `bytes=${start ?? 0}-${end ?? ''}` };
}

/** The field an id of each collection's path is, as the server's errors name it. */
const ID_FIELDS: Record<string, string> = { files: 'file_id', folders: 'folder_id', shares: 'share_id', webhooks: 'webhook_id', deliveries: 'delivery_id', 'api-keys': 'key_id', s: 'url_or_token' };

/**
 * A path of the API with its ids percent-encoded. An id that cannot name a resource (empty, `.` or `..`, or holding `/`,
 * `?` or `#`) is refused before any request: it would reach another route (the listing, the parent) or a path a proxy
 * rewrites. A share token (`/s/…`) is whatever a visitor pasted, sent as it is; only one no URL can carry as a path
 * segment (empty, `.` or `..`, which URLs resolve away however encoded) is refused.
 */
const path = (template: TemplateStringsArray, ...ids: string[]) =>
  template.reduce((out, part, i) => {
    if (i >= ids.length) return out + part;
    const collection = (out + part).split('/').filter(Boolean).pop() ?? '';
    return out + part + pathSegment(ids[i], ID_FIELDS[collection] ?? 'id', collection === 's');
  }, '');

function pathSegment(value: string, field: string, anyText: boolean): string {
  const unusable = typeof value !== 'string' || value === '' || value === '.' || value === '..' || (!anyText && /[/?#]/.test(value));
  if (!unusable) return encodeURIComponent(value);
  const problem = anyText
    ? `must be a share url or its token, not ${JSON.stringify(value)}`
    : `must be an id as the API gives it (not empty, . or .., and without /, ? or #), not ${JSON.stringify(value)}`;
  throw invalidField(field, problem);
}

/** The error the server would answer for a bad field, raised here before any request is sent. */
function invalidField(field: string, problem: string): InvalidRequestError {
  return new InvalidRequestError({ code: 'invalid_request', message: `Request validation failed: ${field}: ${problem}`, details: { fields: [{ field, message: problem }] } });
}
const post = (options: PostOptions) => ({ signal: options.signal, headers: options.idempotencyKey ? { 'Idempotency-Key': options.idempotencyKey } : undefined });

export class Files {
  constructor(
    private readonly http: HttpClient,
    private readonly resumable: ResumableSettings,
  ) {}

  /**
   * Uploads a file, streamed: from a path, a Blob, a Buffer/Uint8Array, a web ReadableStream or a Node Readable.
   * A source of known size at or above the resumable threshold goes through the tus endpoint in chunks, resuming
   * after failures; anything else is one multipart request. Only a source that can be read again (path, Blob,
   * buffer) is retried.
   */
  async upload(source: UploadSource, options: UploadOptions = {}): Promise<FileObject> {
    const opened = await openSource(source);
    const filename = options.name ?? opened.name;
    if (!filename) throw new TypeError('upload() needs options.name when the source is a buffer or a stream.');
    assertWellFormedName(filename, options.name !== undefined ? 'name' : 'filename');
    const threshold = options.resumableThresholdBytes ?? this.resumable.thresholdBytes;
    if (opened.replayable && opened.size !== undefined && opened.size > 0 && opened.size >= threshold) {
      const url = await createUpload(this.http, opened.size, { ...options, filename });
      const fileId = await sendUpload(this.http, opened, url, 0, { ...options, chunkBytes: this.resumable.chunkBytes, retryMs: this.resumable.retryMs });
      return this.get(fileId, options);
    }
    const body = multipartBody(opened, filename, { folder_id: options.folderId, name: options.name, overwrite: options.overwrite?.toString() }, options.onProgress);
    return this.http.data({ method: 'POST', path: '/v1/files/upload', body, ...post(options) });
  }

  /** One page of the files of a folder (the root by default). */
  async list(query: QueryOf<'listFiles'> = {}, options: CallOptions = {}): Promise<CursorPage<FileObject>> {
    return fetchCursorPage(this.http, '/v1/files', query, options);
  }

  /** Every file of a folder, fetching page after page: `for await (const file of client.files.listAll())`. */
  listAll(query: QueryOf<'listFiles'> = {}, options: CallOptions = {}): AsyncGenerator<FileObject> {
    return paginateByCursor(this.http, '/v1/files', query, options);
  }

  async get(fileId: string, options: CallOptions = {}): Promise<FileObject> {
    return this.http.data({ method: 'GET', path: path`/v1/files/${fileId}`, signal: options.signal });
  }

  /** Renames and/or moves a file (`folder_id: null` moves it to the root). */
  async update(fileId: string, changes: BodyOf<'updateFile'>, options: CallOptions = {}): Promise<FileObject> {
    return this.http.data({ method: 'PATCH', path: path`/v1/files/${fileId}`, json: changes, signal: options.signal });
  }

  /** Moves a file to the trash, or with `permanent: true` (an elevated key) deletes it for good. */
  async delete(fileId: string, options: CallOptions & { permanent?: boolean } = {}): Promise<DeletedFile> {
    return this.http.data({ method: 'DELETE', path: path`/v1/files/${fileId}`, query: { permanent: options.permanent }, signal: options.signal });
  }

  async bulkDelete(fileIds: string[], options: PostOptions = {}): Promise<BulkDeleteResult> {
    return this.http.data({ method: 'POST', path: '/v1/files/bulk-delete', json: { file_ids: fileIds }, ...post(options) });
  }

  async restore(fileId: string, options: PostOptions = {}): Promise<RestoredFile> {
    return this.http.data({ method: 'POST', path: path`/v1/files/${fileId}/restore`, ...post(options) });
  }

  /**
   * The file's content as a web ReadableStream (`Readable.fromWeb(stream)` makes it a Node stream); reading it fails
   * with a ConnectionError if the connection is cut before the end, and a TimeoutError if it stalls for `timeoutMs`.
   */
  async download(fileId: string, options: CallOptions & ByteRangeOptions = {}): Promise<ReadableStream<Uint8Array>> {
    return this.signedContent(fileId, 'download', options, { start: options.start, end: options.end });
  }

  /**
   * Writes the file's content to a path (Node), streamed; a failed download leaves no partial file behind. A connection
   * cut before the end raises a ConnectionError, one that stalls for `timeoutMs` a TimeoutError.
   */
  async downloadTo(fileId: string, destination: string, options: CallOptions & ByteRangeOptions = {}): Promise<void> {
    await writeToPath(() => this.download(fileId, options), destination, options);
  }

  /**
   * The file's thumbnail, a WebP of at most 256 × 256, as a web ReadableStream. Images, videos and PDFs get one shortly
   * after their upload (a background job); until then, and for other types, this raises a NotFoundError (404).
   */
  async thumbnail(fileId: string, options: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    return this.signedContent(fileId, 'thumbnail', options);
  }

  /** Writes the file's thumbnail (WebP) to a path (Node), as downloadTo does the content. */
  async thumbnailTo(fileId: string, destination: string, options: CallOptions = {}): Promise<void> {
    await writeToPath(() => this.thumbnail(fileId, options), destination, options);
  }

  private async signedContent(fileId: string, route: 'download' | 'thumbnail', options: CallOptions, range: ByteRangeOptions = {}): Promise<ReadableStream<Uint8Array>> {
    // These routes take a signed link, not the key: the file's fresh download_url / thumbnail_url is that link. Its
    // signature goes to the route under this client's baseUrl, which may differ from the server's public address (and
    // its path prefix from PUBLIC_BASE_URL's).
    const getSigned = async (headers: Record<string, string>) => {
      const file = await this.get(fileId, options);
      const link = route === 'download' ? file.download_url : file.thumbnail_url;
      if (link === undefined) {
        throw new NotFoundError({ code: 'not_found', status: 404, message: `File ${fileId} has no thumbnail (not yet made, or its type gets none)` });
      }
      const signature = new URL(link, 'http://base.invalid').search;
      return this.http.send({ method: 'GET', path: path`/v1/files/${fileId}/${route}` + signature, anonymous: true, headers: { Accept: '*/*', ...headers }, signal: options.signal });
    };
    // A continuation takes a fresh link too: a long download (gigabytes over a slow line) outlives its link's hour.
    return downloadBody(this.http, await getSigned(rangeHeader(range)), `The ${route} of ${fileId}`, range, getSigned, options.signal);
  }
}

/**
 * A download's bytes, continued where a cut or stalled connection left them, within the client's maxRetries: the rest
 * of the same version (Range from the next byte, If-Range with its ETag), each byte once, as the Python, PHP and Ruby
 * clients do. A file changed on the server meanwhile raises a ConnectionError saying so.
 */
function downloadBody(
  http: HttpClient,
  response: Response,
  what: string,
  range: ByteRangeOptions,
  getAgain: (headers: Record<string, string>) => Promise<Response>,
  signal?: AbortSignal,
): ReadableStream<Uint8Array> {
  const ranged = range.start !== undefined || range.end !== undefined;
  const etag = response.headers.get('etag');
  const span = spanOf(response);
  // A ranged request answered with the whole file (a proxy that drops Range) is only cut to the range.
  if ((ranged && response.status === 200) || !etag || !span) return bytesAskedFor(response, http.body(response, what, signal), range);
  let { next } = span;
  const { last } = span;
  let reader = http.body(response, what, signal).getReader();
  let retries = http.maxRetries;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        try {
          const { value, done } = await reader.read();
          if (done) return controller.close();
          next += value.length;
          return controller.enqueue(value);
        } catch (cut) {
          if (!(cut instanceof ConnectionError || cut instanceof TimeoutError) || retries-- <= 0 || signal?.aborted) throw cut;
          const wanted = { start: next, end: Number.isFinite(last) ? last : undefined };
          const rest = await getAgain({ ...rangeHeader(wanted), 'If-Range': etag });
          const sameVersion = rest.headers.get('etag') === etag;
          if (sameVersion && rest.status === 206 && spanOf(rest)?.next === next) reader = http.body(rest, what, signal).getReader();
          else if (sameVersion && rest.status === 200) reader = bytesAskedFor(rest, http.body(rest, what, signal), wanted).getReader();
          else {
            await rest.body?.cancel();
            throw new ConnectionError(
              { code: 'connection_error', message: `${what} was cut and the file changed on the server since it began (HTTP ${rest.status}); download it again.` },
              { cause: cut },
            );
          }
        }
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/** The bytes an answer carries, first and last inclusive (Infinity when its length is unknown); null when unclear. */
function spanOf(response: Response): { next: number; last: number } | null {
  if (response.status === 206) {
    const match = /^bytes (\d+)-(\d+)\//.exec(response.headers.get('content-range') ?? '');
    return match ? { next: Number(match[1]), last: Number(match[2]) } : null;
  }
  const length = response.headers.get('content-length');
  return response.status === 200 ? { next: 0, last: length === null ? Infinity : Number(length) - 1 } : null;
}

/**
 * The bytes a range asked for. A proxy or cache that does not pass Range on answers the whole file with 200: the range
 * is cut out of it here, so that a copy resumed by appending from its size never gets the file's start again.
 */
function bytesAskedFor(response: Response, body: ReadableStream<Uint8Array>, { start, end }: ByteRangeOptions): ReadableStream<Uint8Array> {
  if (response.status !== 200 || (start === undefined && end === undefined)) return body;
  if (start !== undefined && start < 0) return lastBytes(body, -start);
  const first = start ?? 0;
  const last = end ?? Infinity;
  let position = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        const from = Math.max(first - position, 0);
        const to = Math.min(last + 1 - position, chunk.length);
        position += chunk.length;
        if (to > from) controller.enqueue(chunk.subarray(from, to));
        // Past the range: the rest of the file is not read.
        if (position > last) controller.terminate();
      },
    }),
  );
}

/** The last `count` bytes of a stream, holding no more than them. */
function lastBytes(body: ReadableStream<Uint8Array>, count: number): ReadableStream<Uint8Array> {
  let tail = new Uint8Array(0);
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk) {
        const kept = Math.min(tail.length, Math.max(count - chunk.length, 0));
        const next = new Uint8Array(kept + Math.min(chunk.length, count));
        next.set(tail.subarray(tail.length - kept));
        next.set(chunk.subarray(chunk.length - Math.min(chunk.length, count)), kept);
        tail = next;
      },
      flush(controller) {
        controller.enqueue(tail);
      },
    }),
  );
}

/** Streams content to a path (Node); a failed transfer leaves no partial file behind. */
async function writeToPath(open: () => Promise<ReadableStream<Uint8Array>>, destination: string, options: CallOptions): Promise<void> {
  const [{ createWriteStream }, { rm }, { Readable }, { pipeline }] = await Promise.all([
    import('node:fs'),
    import('node:fs/promises'),
    import('node:stream'),
    import('node:stream/promises'),
  ]);
  const content = await open();
  try {
    await pipeline(Readable.fromWeb(content as import('node:stream/web').ReadableStream<Uint8Array>), createWriteStream(destination), { signal: options.signal });
  } catch (error) {
    await rm(destination, { force: true });
    throw error;
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The server refuses a name with an unpaired UTF-16 surrogate (it cannot be stored as UTF-8); refused here the same
 * way, before sending: encoding it for the request would replace the surrogate with U+FFFD or throw a URIError.
 */
function assertWellFormedName(name: string, field: string): void {
  if (!LONE_SURROGATE.test(name)) return;
  const problem = 'must be well-formed Unicode (no unpaired surrogate, U+D800 to U+DFFF)';
  throw invalidField(field, problem);
}

/** Where a resumable upload's chunks go, and how long its failures in a row are retried. */
export interface ResumableSettings {
  thresholdBytes: number;
  chunkBytes: number;
  retryMs: number;
}

export interface ResumableUploadOptions extends CallOptions {
  /** The file name to store; defaults to the path's base name or the File's name (required for buffers). */
  name?: string;
  folderId?: string;
  /** Replace the active file of the same name in the folder instead of adding a numbered copy. */
  overwrite?: boolean;
  /** Overrides the client's `resumableChunkBytes` for this upload. */
  chunkBytes?: number;
  /** Sent again (a restarted process), the announcement answers the same upload instead of a new one. */
  idempotencyKey?: string;
}

/**
 * An upload through the tus endpoint `/v1/uploads`. `url` names it: keep it to resume with
 * `client.uploads.resume(url, source)` after your process stopped. `send()` uploads what the server does not have yet.
 */
export class ResumableUpload {
  constructor(
    private readonly http: HttpClient,
    private readonly files: Files,
    private readonly source: OpenedSource,
    /** As the server gave it (`/v1/uploads/{id}`, sent under the client's base URL), or absolute, used as it is. */
    readonly url: string,
    /** Bytes the server has, as last seen. */
    public offset: number,
    private readonly settings: { chunkBytes: number; retryMs: number },
  ) {}

  /** The file's size in bytes. */
  get size(): number {
    return this.source.size!;
  }

  /** Sends the rest of the file, chunk by chunk, resuming after failures; answers the uploaded file. */
  async send(options: CallOptions & { onProgress?: (progress: UploadProgress) => void } = {}): Promise<FileObject> {
    const fileId = await sendUpload(this.http, this.source, this.url, this.offset, {
      ...this.settings,
      signal: options.signal,
      onProgress: (progress) => {
        this.offset = progress.loaded;
        options.onProgress?.(progress);
      },
    });
    this.offset = this.size;
    return this.files.get(fileId, options);
  }

  /** Deletes the upload and the bytes sent so far (tus termination); the quota it reserved is given back. */
  async abort(options: CallOptions = {}): Promise<void> {
    return deleteUpload(this.http, this.url, options);
  }
}

/** Resumable uploads you drive yourself: announce one, keep its URL, and resume it from another process if need be. */
export class Uploads {
  constructor(
    private readonly http: HttpClient,
    private readonly files: Files,
    private readonly settings: ResumableSettings,
  ) {}

  /** Announces an upload of a path, Blob or buffer (nothing is sent yet); `send()` uploads it. */
  async create(source: UploadSource, options: ResumableUploadOptions = {}): Promise<ResumableUpload> {
    const opened = await this.replayable(source);
    const filename = options.name ?? opened.name;
    if (!filename) throw new TypeError('uploads.create() needs options.name when the source is a buffer.');
    assertWellFormedName(filename, options.name !== undefined ? 'name' : 'filename');
    const url = await createUpload(this.http, opened.size!, { ...options, filename });
    return new ResumableUpload(this.http, this.files, opened, url, 0, this.chunking(options));
  }

  /**
   * The upload at `url` (from an earlier `create`), with the offset the server has; `send()` sends the rest. The
   * source must be the same bytes: the server checks only the length.
   */
  async resume(url: string, source: UploadSource, options: CallOptions & { chunkBytes?: number } = {}): Promise<ResumableUpload> {
    const opened = await this.replayable(source);
    const state = await uploadState(this.http, url, { signal: options.signal, retry: true });
    if (state.size !== undefined && state.size !== opened.size) {
      throw new TypeError(`The upload at ${url} is ${state.size} bytes long; the source given to resume it is ${opened.size}.`);
    }
    return new ResumableUpload(this.http, this.files, opened, url, state.offset, this.chunking(options));
  }

  private chunking(options: { chunkBytes?: number }) {
    return { chunkBytes: options.chunkBytes ?? this.settings.chunkBytes, retryMs: this.settings.retryMs };
  }

  private async replayable(source: UploadSource): Promise<OpenedSource> {
    const opened = await openSource(source);
    if (!opened.replayable || opened.size === undefined) throw new TypeError('A resumable upload needs a source it can read again: a path, a Blob or a buffer.');
    return opened;
  }
}

export class Trash {
  constructor(private readonly http: HttpClient) {}

  async list(query: QueryOf<'listTrash'> = {}, options: CallOptions = {}): Promise<CursorPage<TrashedFile>> {
    return fetchCursorPage(this.http, '/v1/trash', query, options);
  }

  listAll(query: QueryOf<'listTrash'> = {}, options: CallOptions = {}): AsyncGenerator<TrashedFile> {
    return paginateByCursor(this.http, '/v1/trash', query, options);
  }

  /** Deletes every file in the trash for good. */
  async empty(options: CallOptions = {}): Promise<EmptiedTrash> {
    return this.http.data({ method: 'DELETE', path: '/v1/trash', signal: options.signal });
  }
}

export class Folders {
  constructor(private readonly http: HttpClient) {}

  async create(folder: BodyOf<'createFolder'>, options: PostOptions = {}): Promise<Folder> {
    return this.http.data({ method: 'POST', path: '/v1/folders', json: folder, ...post(options) });
  }

  async list(query: QueryOf<'listFolders'> = {}, options: CallOptions = {}): Promise<CursorPage<Folder>> {
    return fetchCursorPage(this.http, '/v1/folders', query, options);
  }

  listAll(query: QueryOf<'listFolders'> = {}, options: CallOptions = {}): AsyncGenerator<Folder> {
    return paginateByCursor(this.http, '/v1/folders', query, options);
  }

  /** One folder; following `parent_id` up to null gives its path from the root. */
  async get(folderId: string, options: CallOptions = {}): Promise<Folder> {
    return this.http.data({ method: 'GET', path: path`/v1/folders/${folderId}`, signal: options.signal });
  }

  /** Renames and/or moves a folder (`parent_id: null` moves it to the root). */
  async update(folderId: string, changes: BodyOf<'updateFolder'>, options: CallOptions = {}): Promise<Folder> {
    return this.http.data({ method: 'PATCH', path: path`/v1/folders/${folderId}`, json: changes, signal: options.signal });
  }

  async delete(folderId: string, options: CallOptions = {}): Promise<DeletedFolder> {
    return this.http.data({ method: 'DELETE', path: path`/v1/folders/${folderId}`, signal: options.signal });
  }
}

export interface ShareAccessOptions extends CallOptions {
  password?: string;
}

export class Shares {
  constructor(private readonly http: HttpClient) {}

  async create(share: BodyOf<'createShare'>, options: PostOptions = {}): Promise<Share> {
    return this.http.data({ method: 'POST', path: '/v1/shares', json: share, ...post(options) });
  }

  /** The account's links with their status and analytics, as `get` answers each. */
  async list(query: QueryOf<'listShares'> = {}, options: CallOptions = {}): Promise<CursorPage<ShareStatus>> {
    return fetchCursorPage(this.http, '/v1/shares', query, options);
  }

  listAll(query: QueryOf<'listShares'> = {}, options: CallOptions = {}): AsyncGenerator<ShareStatus> {
    return paginateByCursor(this.http, '/v1/shares', query, options);
  }

  /** One share link with its status and analytics (`active`, `revoked_at`, `access_count`, …); revoked and expired links too. */
  async get(shareId: string, options: CallOptions = {}): Promise<ShareStatus> {
    return this.http.data({ method: 'GET', path: path`/v1/shares/${shareId}`, signal: options.signal });
  }

  async revoke(shareId: string, options: CallOptions = {}): Promise<RevokedShare> {
    return this.http.data({ method: 'DELETE', path: path`/v1/shares/${shareId}`, signal: options.signal });
  }

  /** What a share link shows its visitor, without an API key. Takes the share's url or its token. */
  async open(urlOrToken: string, options: ShareAccessOptions = {}): Promise<PublicShare> {
    return this.http.data({ method: 'GET', path: path`/s/${shareToken(urlOrToken)}`, anonymous: true, headers: passwordHeader(options), signal: options.signal });
  }

  /** The shared file's content as a visitor downloads it, without an API key. */
  async download(urlOrToken: string, options: ShareAccessOptions & ByteRangeOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const get = (headers: Record<string, string>) =>
      this.http.send({
        method: 'GET',
        path: path`/s/${shareToken(urlOrToken)}/download`,
        anonymous: true,
        headers: { Accept: '*/*', ...passwordHeader(options), ...headers },
        signal: options.signal,
      });
    return downloadBody(this.http, await get(rangeHeader(options)), 'The download of the shared file', options, get, options.signal);
  }

  /** Writes the shared file's content to a path (Node), streamed; a refused or failed download leaves no file behind. */
  async downloadTo(urlOrToken: string, destination: string, options: ShareAccessOptions & ByteRangeOptions = {}): Promise<void> {
    await writeToPath(() => this.download(urlOrToken, options), destination, options);
  }
}

/** The token of a share url (its last path segment, decoded) or the token itself. */
function shareToken(urlOrToken: string): string {
  if (!/^https?:\/\//.test(urlOrToken)) return urlOrToken;
  const segment = new URL(urlOrToken).pathname.split('/').filter(Boolean).pop() ?? '';
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function passwordHeader(options: ShareAccessOptions): Record<string, string> {
  if (options.password === undefined) return {};
  // The header carries the password's UTF-8 bytes, as the server reads it: fetch refuses characters beyond Latin-1.
  return { 'X-Share-Password': String.fromCharCode(...new TextEncoder().encode(options.password)) };
}

export class Webhooks {
  constructor(private readonly http: HttpClient) {}

  /** Registers a webhook; the answer shows its signing secret this once. */
  async create(webhook: BodyOf<'createWebhook'>, options: PostOptions = {}): Promise<CreatedWebhook> {
    return this.http.data({ method: 'POST', path: '/v1/webhooks', json: webhook, ...post(options) });
  }

  async list(query: QueryOf<'listWebhooks'> = {}, options: CallOptions = {}): Promise<Page<Webhook>> {
    return fetchPage(this.http, '/v1/webhooks', query, options);
  }

  listAll(query: QueryOf<'listWebhooks'> = {}, options: CallOptions = {}): AsyncGenerator<Webhook> {
    return paginate(this.http, '/v1/webhooks', query, options);
  }

  async get(webhookId: string, options: CallOptions = {}): Promise<Webhook> {
    return this.http.data({ method: 'GET', path: path`/v1/webhooks/${webhookId}`, signal: options.signal });
  }

  async update(webhookId: string, changes: BodyOf<'updateWebhook'>, options: CallOptions = {}): Promise<Webhook> {
    return this.http.data({ method: 'PATCH', path: path`/v1/webhooks/${webhookId}`, json: changes, signal: options.signal });
  }

  async delete(webhookId: string, options: CallOptions = {}): Promise<DeletedWebhook> {
    return this.http.data({ method: 'DELETE', path: path`/v1/webhooks/${webhookId}`, signal: options.signal });
  }

  /**
   * Replaces the webhook's signing secret; the answer shows the new one this once. For `expiresIn` seconds
   * (default 86400, 0 to 604800) deliveries are signed with the old and the new secret, then with the new one only.
   */
  async rotateSecret(webhookId: string, rotation: { expiresIn?: number } = {}, options: PostOptions = {}): Promise<RotatedWebhookSecret> {
    const json: BodyOf<'rotateWebhookSecret'> = rotation.expiresIn === undefined ? {} : { expires_in: rotation.expiresIn };
    return this.http.data({ method: 'POST', path: path`/v1/webhooks/${webhookId}/rotate-secret`, json, ...post(options) });
  }

  /** Sends a `webhook.test` event to the webhook; answers the queued delivery. */
  async test(webhookId: string, options: PostOptions = {}): Promise<WebhookDelivery> {
    return this.http.data({ method: 'POST', path: path`/v1/webhooks/${webhookId}/test`, ...post(options) });
  }

  async deliveries(webhookId: string, query: QueryOf<'listWebhookDeliveries'> = {}, options: CallOptions = {}): Promise<CursorPage<WebhookDelivery>> {
    return fetchCursorPage(this.http, path`/v1/webhooks/${webhookId}/deliveries`, query, options);
  }

  async *allDeliveries(webhookId: string, query: QueryOf<'listWebhookDeliveries'> = {}, options: CallOptions = {}): AsyncGenerator<WebhookDelivery> {
    // A generator of its own, so that a bad webhook id is refused when iterating starts, as any failure of it is.
    yield* paginateByCursor(this.http, path`/v1/webhooks/${webhookId}/deliveries`, query, options);
  }

  async delivery(webhookId: string, deliveryId: string, options: CallOptions = {}): Promise<WebhookDelivery> {
    return this.http.data({ method: 'GET', path: path`/v1/webhooks/${webhookId}/deliveries/${deliveryId}`, signal: options.signal });
  }

  /**
   * Delivers again every retained event in [since, until) (until defaults to now) that the webhook subscribes to:
   * new delivery ids, the same event ids. Answers how many were queued; events still waiting in an earlier replay
   * are not queued again.
   */
  async replay(webhookId: string, window: { since: Date | string; until?: Date | string }, options: PostOptions = {}): Promise<ReplayQueued> {
    const json = { since: isoString(window.since), ...(window.until === undefined ? {} : { until: isoString(window.until) }) };
    return this.http.data({ method: 'POST', path: path`/v1/webhooks/${webhookId}/replay`, json, ...post(options) });
  }

  /** Sends a delivery again (same delivery id); answers the delivery, queued. */
  async redeliver(webhookId: string, deliveryId: string, options: PostOptions = {}): Promise<WebhookDelivery> {
    return this.http.data({ method: 'POST', path: path`/v1/webhooks/${webhookId}/deliveries/${deliveryId}/redeliver`, ...post(options) });
  }
}

export class ApiKeys {
  constructor(private readonly http: HttpClient) {}

  /** Creates a key; the answer shows the key itself this once. */
  async create(key: BodyOf<'createApiKey'>, options: PostOptions = {}): Promise<CreatedApiKey> {
    return this.http.data({ method: 'POST', path: '/v1/api-keys', json: key, ...post(options) });
  }

  async list(query: QueryOf<'listApiKeys'> = {}, options: CallOptions = {}): Promise<Page<ApiKey>> {
    return fetchPage(this.http, '/v1/api-keys', query, options);
  }

  listAll(query: QueryOf<'listApiKeys'> = {}, options: CallOptions = {}): AsyncGenerator<ApiKey> {
    return paginate(this.http, '/v1/api-keys', query, options);
  }

  async revoke(keyId: string, options: CallOptions = {}): Promise<RevokedApiKey> {
    return this.http.data({ method: 'DELETE', path: path`/v1/api-keys/${keyId}`, signal: options.signal });
  }
}

export class User {
  constructor(private readonly http: HttpClient) {}

  /** The account, its plan, storage use and limits, and the calling key. */
  async info(options: CallOptions = {}): Promise<UserInfo> {
    return this.http.data({ method: 'GET', path: '/v1/user/info', signal: options.signal });
  }
}

export interface EventListQuery {
  /** A `next_cursor` from an earlier answer; without it the feed starts at the oldest retained event. */
  after?: string;
  /** 1 to 1000 (default 100). */
  limit?: number;
  /** Only these event names. */
  types?: string[] | string;
  /** Long poll: wait up to this many seconds (0 to 30) for an event when there is none yet. */
  wait?: number;
}

/** The tail of the feed: iterate it for every event from `after` on, as they happen; `cursor` is where to resume. */
export interface EventTail extends AsyncIterable<FeedEvent> {
  /** Where to resume: after the last page read to its end (resuming may repeat events of a page the loop left midway). */
  readonly cursor: string | undefined;
}

export class Events {
  constructor(private readonly http: HttpClient) {}

  /** One answer of the event feed: events oldest first and `next_cursor`, always present, to read on from. */
  async list(query: EventListQuery = {}, options: CallOptions = {}): Promise<EventPage> {
    const types = Array.isArray(query.types) ? query.types.join(',') : query.types;
    return this.http.envelope<EventPage>({ method: 'GET', path: '/v1/events', query: { ...query, types }, signal: options.signal });
  }

  /**
   * Every event from `after` on, waiting (long polls of `wait`, default 30 s) for new ones: a `for await` loop
   * that never ends by itself; break out of it, or abort `options.signal`.
   */
  tail(query: Omit<EventListQuery, 'after'> & { after?: string } = {}, options: CallOptions = {}): EventTail {
    const events = this;
    let cursor = query.after;
    return {
      get cursor() {
        return cursor;
      },
      async *[Symbol.asyncIterator]() {
        for (;;) {
          options.signal?.throwIfAborted();
          const page = await events.list({ ...query, after: cursor, wait: query.wait ?? 30 }, options);
          // Moved before the page's last event is handed out, so a loop that stops at it resumes after it.
          const last = page.data.length - 1;
          if (last < 0) cursor = page.next_cursor;
          for (const [i, event] of page.data.entries()) {
            if (i === last) cursor = page.next_cursor;
            yield event;
          }
        }
      },
    };
  }
}

function isoString(value: Date | string): string {
  return value instanceof Date ? value.toISOString() : value;
}
