import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Logger, LevelWithSilent } from 'pino';
import { type Options, pinoHttp } from 'pino-http';
import { storage } from 'nestjs-pino/storage.js';
import { assignRequestId } from '../../common/http/request-id.js';

/** How requests are logged: one line when each finishes (info, 4xx warn, 5xx error), with its id, method and URL. */
export function requestLoggerOptions(level: string): Options {
  return {
    level,
    // The id is normally given by the first middleware (app.factory.ts) already; this covers any other app.
    genReqId: assignRequestId,
    redact: { paths: ['req.headers.authorization', 'req.headers["x-share-password"]', 'req.headers.cookie'], censor: '[redacted]' },
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info'),
    serializers: {
      req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: redactedUrl(req.url) }),
    },
  };
}

/**
 * Query parameters whose value is a credential: a signed link's `signature` (a credential until it expires), and the
 * names clients wrongly put an API key, token or password under (the service reads those only from headers, but a
 * key sent in the URL must not also end up in the logs).
 */
const CREDENTIAL_PARAMETER = /^(signature|api[_-]?key|key|access[_-]?token|token|password|secret)(\[|$)/i;

/**
 * A share link's token (`/s/{token}`, `/s/{token}/download`; Express matches the `s` in either case): the only
 * credential of a link without a password, and valid for as long as the link lives, unlike a download signature.
 */
const SHARE_TOKEN_SEGMENT = /^(\/+s\/)[^/?]+/i;

/**
 * The URL with a share link's token replaced, and the value of every credential query parameter, and of any
 * parameter whose value holds an API key (`fss_…`). Names are compared as the query parser reads them
 * (percent-decoded, `+` a space, `signature[]`), so `?%73ignature=` or a second `signature` is not logged either.
 */
export function redactedUrl(url: string): string {
  url = url.replace(SHARE_TOKEN_SEGMENT, '$1[redacted]');
  const queryStart = url.indexOf('?');
  if (queryStart === -1) return url;
  const pairs = url.slice(queryStart + 1).split('&').map((pair) => {
    const nameEnd = pair.indexOf('=');
    const name = nameEnd === -1 ? pair : pair.slice(0, nameEnd);
    const holdsKey = nameEnd !== -1 && decodedQueryName(pair.slice(nameEnd + 1)).includes('fss_');
    return holdsKey || CREDENTIAL_PARAMETER.test(decodedQueryName(name)) ? `${name}=[redacted]` : pair;
  });
  return `${url.slice(0, queryStart)}?${pairs.join('&')}`;
}

function decodedQueryName(name: string): string {
  const spaced = name.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    return spaced;
  }
}

/**
 * The request's logger, made when something first logs: pino-http makes it for every request, serialising
 * the request into its bindings (about 11 KB of garbage), though at LOG_LEVEL=warn a successful request
 * logs nothing. nestjs-pino's loggers read it from here (its AsyncLocalStorage store).
 */
class RequestLogStore {
  private made: Logger | undefined;
  readonly responseLogger = undefined;

  constructor(
    private readonly root: Logger,
    private readonly request: IncomingMessage,
  ) {}

  get logger(): Logger {
    return (this.made ??= this.root.child({ req: this.request }));
  }

  /** PinoLogger.assign replaces the request's logger with a child carrying more fields. */
  set logger(logger: Logger) {
    this.made = logger;
  }
}

/**
 * What pino-http does for each request, with the same logger, serializers, levels and lines, except that the
 * request's child logger is made only when a line is written at an enabled level: the request id (and its
 * X-Request-Id header) on every request; the completion line ("request completed", "request aborted" or
 * "request errored", with `res` and `responseTime`) at the level `customLogLevel` gives.
 */
export function requestLogging(options: Options): (request: Request, response: Response, next: NextFunction) => void {
  const root = pinoHttp(options).logger;
  const genReqId = options.genReqId!;
  const levelOf = options.customLogLevel!;
  return (request, response, next) => {
    const started = Date.now();
    request.id = request.id || genReqId(request, response);
    const store = new RequestLogStore(root, request);
    const complete = (err?: Error) => {
      response.removeListener('close', complete);
      response.removeListener('finish', complete);
      response.removeListener('error', complete);
      finished(root, store, request, response, levelOf(request, response, err), started, err);
    };
    response.on('close', complete);
    response.on('finish', complete);
    response.on('error', complete);
    storage.run(store as never, next);
  };
}

function finished(root: Logger, store: RequestLogStore, request: IncomingMessage, response: ServerResponse & { err?: Error }, level: LevelWithSilent, started: number, err: Error | undefined): void {
  if (level === 'silent' || !root.isLevelEnabled(level)) return;
  const responseTime = Date.now() - started;
  const log = store.logger;
  if (err || response.err || response.statusCode >= 500) {
    const error = err || response.err || new Error(`failed with status code ${response.statusCode}`);
    log[level]({ res: response, err: error, responseTime }, 'request errored');
    return;
  }
  log[level]({ res: response, responseTime }, !request.readableAborted && response.writableEnded ? 'request completed' : 'request aborted');
}
