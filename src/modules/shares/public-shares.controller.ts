import { Body, Controller, Get, HttpCode, Param, Post, Req, Res, UseFilters } from '@nestjs/common';
import { CommandBus, QueryBus } from '@nestjs/cqrs';
import { ApiConsumes, ApiHeader, ApiOperation, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { isIP } from 'node:net';
import { Public } from '../../common/auth/access.decorator.js';
import { Clock } from '../../common/clock.js';
import { ApiError, InvalidRequest } from '../../common/errors/api-error.js';
import { successEnvelope } from '../../common/http/envelope.js';
import { ApiBlobAnswers, ApiEnvelope, ApiErrors } from '../../common/http/openapi.js';
import { plainAddress } from '../../common/net/ip-address.js';
import { AppConfig } from '../../config/app-config.js';
import { CONTENT_ARRIVING_ANSWER, FileContentResponse } from '../files/file-content-response.js';
import { AccessShareCommand, type ShareAccessAction, type ShareVisitor } from './commands/access-share.command.js';
import { PublicShareResponse } from './dto/public-share.response.js';
import { ShareDownloadForm } from './dto/share-download.form.js';
import { TooManyPasswordAttempts } from './password-attempts.js';
import { FindPublicShareQuery } from './queries/find-public-share.query.js';
import type { UsableShare } from './share-lookup.js';
import { lockedPage, problemPage, sendSharePage, wantsSharePage } from './share-page.js';
import { SharePageRefusals } from './share-page-refusals.filter.js';

const PASSWORD_HEADER = 'x-share-password';
/** The longest user agent a share.accessed event carries: real ones are a few hundred characters; the header may be 16 KiB. */
export const MAX_RECORDED_USER_AGENT_LENGTH = 512;

const PUBLIC_ERRORS = [
  [401, 'password_required: the link has a password and it is missing or wrong (the same answer for both).'],
  [404, 'not_found: unknown, revoked or invalidated link (its file went to trash or was deleted).'],
  [410, 'share_expired: the link is past its expires_at.'],
  [
    429,
    'rate_limit_exceeded: too many wrong passwords from this client for this link (10 per 15 minutes; an IPv6 client counts by its /64), ' +
      'the link is backing off after 20 wrong passwords from all clients (1 s doubling to 1 h; not for a client that gave the right password in the last 30 days), other passwords for the link were still being checked after ' +
      '5 s of waiting for them (Retry-After of at most 10 s), or too many requests from this address; see Retry-After.',
  ],
] as const satisfies ReadonlyArray<[number, string]>;

const REPEATED_PASSWORD_ANSWER: [number, string] = [400, 'invalid_request: malformed input, or X-Share-Password sent more than once (not counted as a wrong password).'];

/**
 * Share links as visitors use them, without an API key. JSON for programs; a small HTML page for
 * browsers (chosen by the Accept header), whose errors are pages too.
 */
@ApiTags('Public share links')
@Public()
@UseFilters(SharePageRefusals)
@Controller('s')
export class PublicSharesController {
  constructor(
    private readonly commands: CommandBus,
    private readonly queries: QueryBus,
    private readonly content: FileContentResponse,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  @Get(':token')
  @ApiOperation({
    operationId: 'openShare',
    summary: 'Open a share link',
    description:
      'JSON: the shared file\'s public metadata (counts a `view` and emits `share.accessed`). A browser (Accept: text/html) gets a page ' +
      'with the file name, size and a download button, or a password form for protected links; while a password from this visitor ' +
      'would be refused (locked out, or the link backing off) the page says when to come back instead, with the 429 and Retry-After ' +
      'that password would get.',
  })
  @ApiParam({ name: 'token', description: 'The token from the share url.' })
  @ApiHeader({ name: 'X-Share-Password', required: false, description: 'The link password, when it has one.' })
  @ApiProduces('application/json', 'text/html')
  @ApiEnvelope(PublicShareResponse)
  @ApiErrors(...PUBLIC_ERRORS, REPEATED_PASSWORD_ANSWER)
  async open(@Param('token') token: string, @Req() request: Request, @Res() response: Response): Promise<void> {
    response.vary('Accept');
    if (!wantsSharePage(request)) {
      // Each open counts a view, and a revoked or expired link must stop answering at once: no cache may keep this,
      // nor a refusal (a 404 or 410 is cacheable by default).
      response.setHeader('Cache-Control', 'no-store');
      const granted = await this.access(token, passwordFrom(request), 'view', request);
      response.status(200).json(successEnvelope(PublicShareResponse.from(granted, `${this.config.publicBaseUrl}/s/${token}/download`)));
      return;
    }
    await this.asPage(request, response, async () => {
      const { share } = await this.queries.execute(new FindPublicShareQuery(token, visitorIp(request)));
      if (share.passwordHash !== null) return sendSharePage(response, 200, { kind: 'password', downloadPath: this.downloadPath(token), error: null });
      const { file } = await this.access(token, undefined, 'view', request);
      sendSharePage(response, 200, { kind: 'file', downloadPath: this.downloadPath(token), name: file.name, size: file.size, mimeType: file.mimeType, expiresAt: share.expiresAt });
    });
  }

  @Get(':token/download')
  @ApiOperation({
    operationId: 'downloadShare',
    summary: 'Download through a share link',
    description:
      'Streams the file (Range, If-Range, ETag/If-None-Match, Last-Modified/If-Modified-Since and HEAD supported). Counts a `download` and emits `share.accessed` (HEAD is not counted).',
  })
  @ApiParam({ name: 'token', description: 'The token from the share url.' })
  @ApiHeader({ name: 'X-Share-Password', required: false, description: 'The link password, when it has one.' })
  @ApiProduces('application/octet-stream')
  @ApiBlobAnswers()
  @ApiErrors(...PUBLIC_ERRORS, REPEATED_PASSWORD_ANSWER, [403, 'file_infected: the file is quarantined.'], CONTENT_ARRIVING_ANSWER)
  async download(@Param('token') token: string, @Req() request: Request, @Res() response: Response): Promise<void> {
    await this.sendFile(token, passwordFrom(request), request, response);
  }

  @Post(':token/download')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'downloadShareWithForm',
    summary: 'Download through a share link with a form',
    description:
      'What the share page\'s password form submits: the password in the body (or X-Share-Password), so it never appears in a URL. ' +
      'Answers like GET: Range, If-Range, ETag/If-None-Match, If-Modified-Since; counts a `download` and emits `share.accessed`.',
  })
  @ApiParam({ name: 'token', description: 'The token from the share url.' })
  @ApiHeader({ name: 'X-Share-Password', required: false, description: 'The link password, when the body does not carry it.' })
  @ApiConsumes('application/x-www-form-urlencoded', 'application/json')
  @ApiProduces('application/octet-stream', 'text/html')
  @ApiBlobAnswers()
  @ApiErrors(...PUBLIC_ERRORS, [400, 'invalid_request: unexpected form fields, or X-Share-Password sent more than once.'], [403, 'file_infected: the file is quarantined.'], CONTENT_ARRIVING_ANSWER)
  async downloadWithForm(@Param('token') token: string, @Body() form: ShareDownloadForm, @Req() request: Request, @Res() response: Response): Promise<void> {
    await this.sendFile(token, form.password || passwordFrom(request), request, response);
  }

  private async sendFile(token: string, password: string | undefined, request: Request, response: Response): Promise<void> {
    const send = async () => {
      const { file } = await this.access(token, password, 'download', request);
      await this.content.send(
        request,
        response,
        file.id,
        { key: file.blobKey, size: file.size, md5: file.md5, contentType: file.mimeType, fileName: file.name, modifiedAt: file.modifiedAt },
        this.clock.now(),
      );
    };
    if (wantsSharePage(request)) await this.asPage(request, response, send, token, password !== undefined);
    else await send();
  }

  /**
   * Origin-relative (so the CSP's form-action 'self' holds whatever host the visitor used) and
   * including PUBLIC_BASE_URL's path, for a service served under a prefix.
   */
  private downloadPath(token: string): string {
    return `${new URL(this.config.publicBaseUrl).pathname.replace(/\/+$/, '')}/s/${encodeURIComponent(token)}/download`;
  }

  private access(token: string, password: string | undefined, action: ShareAccessAction, request: Request): Promise<UsableShare> {
    const visitor: ShareVisitor = { ipAddress: visitorIp(request), userAgent: recordedUserAgent(request) };
    return this.commands.execute(new AccessShareCommand(token, password, action, visitor, request.method !== 'HEAD', request.headers));
  }

  /**
   * Runs `work`, turning a refusal into a page with the same status. A wrong password shows the form again,
   * unless no password can be tried now: then the page says when to come back.
   */
  private async asPage(request: Request, response: Response, work: () => Promise<void>, token?: string, passwordGiven = false): Promise<void> {
    try {
      await work();
    } catch (error) {
      if (!(error instanceof ApiError) || response.headersSent) throw error;
      for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
      if (error.code === 'password_required' && token !== undefined) {
        const lockout = passwordGiven ? await this.lockoutAfterWrongPassword(token, request) : null;
        if (lockout) return sendSharePage(response, 401, lockedPage(lockout, this.clock.now(), true));
        sendSharePage(response, 401, { kind: 'password', downloadPath: this.downloadPath(token), error: passwordGiven ? 'That password is not right. Try again.' : 'This file needs a password.' });
        return;
      }
      sendSharePage(response, error.status, problemPage(error, this.clock.now()));
    }
  }

  /** Whether the wrong password just given left this visitor unable to try another now (the answer stays 401). */
  private async lockoutAfterWrongPassword(token: string, request: Request): Promise<TooManyPasswordAttempts | null> {
    try {
      await this.queries.execute(new FindPublicShareQuery(token, visitorIp(request)));
      return null;
    } catch (error) {
      if (error instanceof TooManyPasswordAttempts) return error;
      return null;
    }
  }
}

/**
 * The visitor's address. Behind a trusted proxy Express takes it from X-Forwarded-For, which a client may fill with
 * anything that is not an address; then the connection's own address is the one known for sure.
 */
function visitorIp(request: Request): string {
  const forwarded = request.ip;
  if (forwarded && isIP(forwarded.split('%')[0])) return plainAddress(forwarded);
  const connected = request.socket.remoteAddress;
  return connected ? plainAddress(connected) : 'unknown';
}

/** The User-Agent as share.accessed records it: decoded like the password header, and bounded (whole characters). */
function recordedUserAgent(request: Request): string | null {
  const value = request.headers['user-agent'];
  if (!value) return null;
  const text = utf8HeaderText(value);
  return text.length <= MAX_RECORDED_USER_AGENT_LENGTH ? text : Array.from(text).slice(0, MAX_RECORDED_USER_AGENT_LENGTH).join('');
}

/** X-Share-Password, decoded as UTF-8 when its bytes are (see utf8HeaderText). */
function passwordFrom(request: Request): string | undefined {
  // Node joins repeated headers into "a, b", which would be checked, and counted, as one wrong password.
  if ((request.headersDistinct[PASSWORD_HEADER]?.length ?? 0) > 1) throw new InvalidRequest('Send one X-Share-Password header, not several.');
  const value = request.headers[PASSWORD_HEADER];
  if (typeof value !== 'string' || value === '') return undefined;
  return utf8HeaderText(value);
}

/** Throws on bytes that are not UTF-8, and keeps a leading BOM (it is part of the text sent). */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Node reads header bytes as Latin-1; clients such as curl send non-ASCII text as UTF-8 bytes, so those are
 * decoded as UTF-8 when they are valid UTF-8 (a U+FFFD they encode included: a password may hold one).
 */
function utf8HeaderText(value: string): string {
  try {
    return STRICT_UTF8.decode(Buffer.from(value, 'latin1'));
  } catch {
    return value;
  }
}
