import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import multer, { MulterError, type StorageEngine } from 'multer';
import { catchError, from, type Observable, switchMap, throwError } from 'rxjs';
import { QueryBus } from '@nestjs/cqrs';
import type { Actor } from '../../../common/auth/actor.js';
import { ApiError, InvalidRequest } from '../../../common/errors/api-error.js';
import { ApiValidationPipe } from '../../../common/http/validation.pipe.js';
import { GetFolderQuery } from '../../folders/queries/get-folder.query.js';
import { UploadFileRequest } from '../dto/file.requests.js';
import { acceptedName, fileNameOfPart } from '../file-naming.js';
import { type OverwriteTarget, type ReceivedUpload, SMALL_UPLOAD_BYTES, UploadReceiver } from './upload-receiver.js';
import { UploadSizeLimit } from './upload-size-limit.js';

/**
 * Multipart framing around the file (boundaries, part headers, the small fields) never takes more
 * than this, so a Content-Length beyond max size + this is refused before a byte is read.
 */
export const MULTIPART_ALLOWANCE = 16 * 1024;

const LIMITS = { files: 1, fields: 5, fieldSize: 2048, parts: 8, headerPairs: 40 };

const MULTER_MESSAGES: Partial<Record<string, string>> = {
  LIMIT_FILE_COUNT: 'Send exactly one file, in the field "file".',
  LIMIT_UNEXPECTED_FILE: 'The file must be sent in the field "file".',
  LIMIT_FIELD_COUNT: 'Too many form fields; the upload takes file, name, folder_id and overwrite.',
  LIMIT_PART_COUNT: 'Too many form parts; the upload takes file, name, folder_id and overwrite.',
  LIMIT_FIELD_VALUE: 'A form field value is too long.',
};

declare module 'express-serve-static-core' {
  interface Request {
    upload?: ReceivedUpload & { originalname: string };
  }
}

/**
 * Reads the multipart upload with multer and a storage engine that streams the file part through
 * UploadReceiver. A refusal (too large, over quota) is answered at once, without waiting for the
 * rest of the request, and the connection is closed behind it. If anything fails after the bytes
 * were received (validation, a missing folder), the temporary blob and its reservation are released.
 */
@Injectable()
export class UploadInterceptor implements NestInterceptor {
  private readonly validation = new ApiValidationPipe();

  constructor(
    private readonly receiver: UploadReceiver,
    private readonly queries: QueryBus,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    return from(this.receive(request, response)).pipe(
      switchMap(() => next.handle()),
      catchError((error: unknown) => {
        const upload = request.upload;
        const cleanup = upload ? this.receiver.release(upload.uploadId, upload.tempKey) : Promise.resolve();
        return from(cleanup).pipe(switchMap(() => throwError(() => error)));
      }),
    );
  }

  private async receive(request: Request, response: Response): Promise<void> {
    const actor = request.actor;
    if (!actor) throw new Error('UploadInterceptor needs an authenticated route');
    const encoding = contentEncodingOf(request);
    if (encoding) {
      closeAfterAnswer(request, response);
      // multer reads the body as sent: a compressed one would be refused as malformed, or stored as other bytes than meant.
      throw new ApiError(415, 'invalid_request', `An upload is read as sent, and this one says it is compressed (Content-Encoding: ${encoding}); send it uncompressed.`);
    }
    const declared = Number(request.headers['content-length']);
    const tooLarge = new UploadSizeLimit(actor.plan).checkDeclared(declared, MULTIPART_ALLOWANCE);
    if (tooLarge) {
      closeAfterAnswer(request, response);
      throw tooLarge;
    }
    const aborted = new AbortController();
    request.on('close', () => {
      if (!request.complete) aborted.abort();
    });
    // Failures of the service itself (the database) met while the file streamed in: answered as what they are, not as
    // a body that could not be read.
    const serviceFaults = new WeakSet<object>();
    await new Promise<void>((resolve, reject) => {
      const engine: StorageEngine = {
        _handleFile: (_req, file, callback) => {
          // multer keeps the client's path (preservePath), so that a filename with nothing after it still reaches the name rules.
          file.originalname = fileNameOfPart(file.originalname);
          const bodyFaults = new WeakSet<object>();
          file.stream.on('error', (error) => bodyFaults.add(error));
          /** Whether the request (its body cut short or malformed, its client gone) is what failed the upload. */
          const fromRequest = (error: unknown) =>
            (typeof error === 'object' && error !== null && bodyFaults.has(error)) || aborted.signal.aborted || (file.stream.destroyed && !file.stream.readableEnded);
          // Fields sent before the file part are known by now; an overwrite is judged by its net change.
          const overwriteTarget = (): OverwriteTarget | null => {
            const fields = (request.body ?? {}) as Record<string, unknown>;
            if (fields.overwrite !== 'true' && fields.overwrite !== '1') return null;
            const name = typeof fields.name === 'string' ? fields.name : file.originalname;
            return { name, folderId: typeof fields.folder_id === 'string' ? fields.folder_id : null };
          };
          const receive = () => this.receiver.receive(actor, file.stream, aborted.signal, Number.isFinite(declared) ? declared : undefined, overwriteTarget);
          // A small body is all in within moments: judging its fields early would only add work to every small upload.
          const judgeFieldsNow = !(Number.isFinite(declared) && declared <= SMALL_UPLOAD_BYTES);
          (judgeFieldsNow ? this.refuseFieldsSoFar(actor, request) : Promise.resolve())
            .then(receive)
            .then(
              (received) => callback(null, received),
              (error: unknown) => {
                // Answer now; multer would otherwise read the whole remaining body before reporting.
                if (error instanceof ApiError) reject(error);
                else if (error instanceof Error && !fromRequest(error)) {
                  serviceFaults.add(error);
                  reject(error);
                }
                callback(error as Error);
              },
            );
        },
        _removeFile: (_req, file, callback) => {
          const received = file as unknown as Partial<ReceivedUpload>;
          if (!received.uploadId || !received.tempKey) return callback(null);
          this.receiver.release(received.uploadId, received.tempKey).then(() => callback(null), callback);
        },
      };
      multer({ storage: engine, limits: LIMITS, defParamCharset: 'utf8', preservePath: true } as multer.Options).single('file')(request, response, (error: unknown) => {
        if (!error) {
          if (request.file) request.upload = request.file as unknown as ReceivedUpload & { originalname: string };
          const malformed = malformedFields(request);
          if (malformed.length > 0) return reject(InvalidRequest.fields(malformed));
          // A part named "file" without a filename is a form field to multer, which validation would call unknown.
          if (!request.file && typeof (request.body as Record<string, unknown> | undefined)?.file === 'string') {
            return reject(InvalidRequest.fields([{ field: 'file', message: 'must be a file part, with a filename in its Content-Disposition' }]));
          }
          return resolve();
        }
        reject(error);
      });
    }).catch((error: unknown) => {
      closeAfterAnswer(request, response);
      throw error instanceof Error && serviceFaults.has(error) ? error : translate(error);
    });
  }

  /**
   * The fields sent before the file part, judged as the route judges them once the body is in: a form they already
   * make invalid, or a folder that does not exist, is refused before the file's bytes are read, not after the client
   * has sent gigabytes. Fields after the file part are judged at the end.
   */
  private async refuseFieldsSoFar(actor: Actor, request: Request): Promise<void> {
    if (Object.keys(request.body ?? {}).length === 0) return;
    const malformed = malformedFields(request);
    if (malformed.length > 0) throw InvalidRequest.fields(malformed);
    const form = (await this.validation.transform({ ...(request.body as object) }, { type: 'body', metatype: UploadFileRequest })) as UploadFileRequest;
    // The part's own filename is not judged yet: a name field may still follow the file.
    if (form.name !== undefined) acceptedName(form.name);
    if (form.folder_id) await this.queries.execute(new GetFolderQuery(actor, form.folder_id));
  }
}

/** The Content-Encoding a request declares, other than identity; null when its body is sent as it is. */
function contentEncodingOf(request: Request): string | null {
  const encoding = (request.headers['content-encoding'] ?? '').trim().toLowerCase();
  return encoding === '' || encoding === 'identity' ? null : encoding;
}

/**
 * Form fields that validation would misjudge. One sent in a charset the parser cannot decode (a part's
 * `Content-Type: text/plain; charset=…`) comes without a value and would pass as not given, the upload silently taking
 * the file's own name. One sent twice comes as a list, which validation would call "must be a string"; it is refused
 * the way a query parameter given twice is.
 */
function malformedFields(request: Request): { field: string; message: string }[] {
  const fields = (request.body ?? {}) as Record<string, unknown>;
  return Object.entries(fields).flatMap(([field, value]) => {
    if (value === undefined) return [{ field, message: 'is in a charset the service cannot read (its part\'s Content-Type names it); send it in UTF-8' }];
    if (Array.isArray(value)) return [{ field, message: 'must be given at most once' }];
    return [];
  });
}

function translate(error: unknown): unknown {
  if (error instanceof ApiError) return error;
  if (error instanceof MulterError) return new InvalidRequest(MULTER_MESSAGES[error.code] ?? `The multipart body was refused: ${error.message}.`);
  return new InvalidRequest(`The multipart body could not be read: ${error instanceof Error ? error.message : String(error)}.`);
}

/** When a refusal comes before the client finished sending, close the connection after the answer. */
function closeAfterAnswer(request: Request, response: Response): void {
  if (!request.complete && !response.headersSent) response.setHeader('Connection', 'close');
}
