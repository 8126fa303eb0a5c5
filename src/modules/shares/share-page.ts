import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { ApiError } from '../../common/errors/api-error.js';
import { type PasswordRefusal, TooManyPasswordAttempts } from './password-attempts.js';

/**
 * The page a browser sees at /s/{token}: no scripts at all, one fixed stylesheet allowed by its
 * hash, a form that POSTs the password (so it never lands in a URL, a log or the history), and
 * every value escaped.
 */
const STYLE = `
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f5f7;color:#1d2330}
main{max-width:28rem;margin:12vh auto;background:#fff;border-radius:12px;padding:2rem;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:1.25rem;margin:0 0 .25rem;word-break:break-word}
p{margin:.25rem 0;color:#4a5263}
.error{color:#b42318;font-weight:600}
label{display:block;margin-top:1rem;font-weight:600}
input{box-sizing:border-box;width:100%;padding:.6rem;margin-top:.25rem;border:1px solid #c4c8d0;border-radius:8px;font:inherit}
.button{display:inline-block;margin-top:1.25rem;padding:.65rem 1.4rem;border:0;border-radius:8px;background:#2457d6;color:#fff;font:inherit;font-weight:600;text-decoration:none;cursor:pointer}
`.trim();

const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

export const SHARE_PAGE_HEADERS: Record<string, string> = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy': `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
  // The token in the page's URL must not leak to other sites through the Referer header.
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};

export type SharePage =
  | { kind: 'file'; downloadPath: string; name: string; size: number; mimeType: string; expiresAt: Date | null }
  | { kind: 'password'; downloadPath: string; error: string | null }
  /** No password can be checked until `retryAt`: the page says when to come back instead of showing a form. */
  | { kind: 'locked'; refusal: PasswordRefusal; retryAfterSeconds: number; retryAt: Date; wrongPassword: boolean }
  | { kind: 'problem'; title: string; message: string };

export function renderSharePage(page: SharePage): string {
  switch (page.kind) {
    case 'file':
      return layout(
        displayedFileName(page.name),
        `<h1>${escapeHtml(displayedFileName(page.name))}</h1>
<p><span title="${page.size} bytes">${escapeHtml(formatSize(page.size))}</span> · ${escapeHtml(page.mimeType)}</p>
${page.expiresAt ? `<p>Link expires ${escapeHtml(page.expiresAt.toISOString().replace('T', ' ').slice(0, 16))} UTC</p>` : ''}
<a class="button" id="download" href="${escapeHtml(page.downloadPath)}">Download</a>`,
      );
    case 'password':
      return layout(
        'Password-protected file',
        `<h1>Password-protected file</h1>
<p>Enter the password you were given to download this file.</p>
<form method="post" action="${escapeHtml(page.downloadPath)}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required autofocus>
${page.error ? `<p class="error" role="alert" id="error">${escapeHtml(page.error)}</p>` : ''}
<button class="button" id="download" type="submit">Download</button>
</form>`,
      );
    case 'locked':
      return layout(
        'Too many attempts',
        `<h1>Too many attempts</h1>
${page.wrongPassword ? '<p class="error" role="alert" id="error">That password is not right.</p>' : ''}
<p>${escapeHtml(LOCKED_REASONS[page.refusal])}</p>
<p id="retry">You can try again in ${escapeHtml(formatWait(page.retryAfterSeconds))}${page.retryAfterSeconds >= 60 ? `, after ${escapeHtml(formatUtcMinute(page.retryAt))} UTC` : ''}.</p>`,
      );
    case 'problem':
      return layout(page.title, `<h1>${escapeHtml(page.title)}</h1>\n<p>${escapeHtml(page.message)}</p>`);
  }
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

/** Sends a page with the headers that keep it inert (no scripts, no framing, no referrer). */
export function sendSharePage(response: Response, status: number, page: SharePage): void {
  response.status(status).set(SHARE_PAGE_HEADERS).send(renderSharePage(page));
}

const LOCKED_REASONS: Record<PasswordRefusal, string> = {
  client: 'Too many wrong passwords were tried on this link from your network.',
  link: 'This link has had too many wrong passwords, so it takes none for a while.',
  checking: 'Other passwords for this link are being checked.',
};

/** The page for a visitor who cannot have a password checked now; `wrongPassword` when the one just sent was wrong. */
export function lockedPage(refusal: TooManyPasswordAttempts, now: Date, wrongPassword = false): SharePage {
  const { retryAfterSeconds } = refusal;
  return { kind: 'locked', refusal: refusal.refusal, retryAfterSeconds, retryAt: new Date(now.getTime() + retryAfterSeconds * 1000), wrongPassword };
}

/** A refusal as the page shows it: an ApiError, or the error of an envelope the API would have answered. */
export type PageRefusal = ApiError | { code: string; message: string; details?: Record<string, unknown> };

/** The page a browser gets for a refused visit: a title and a message a visitor understands. */
export function problemPage(error: PageRefusal, now: Date): SharePage {
  if (error instanceof TooManyPasswordAttempts) return lockedPage(error, now);
  const titles: Record<string, string> = {
    not_found: 'Link not found',
    share_expired: 'Link expired',
    file_infected: 'File unavailable',
    rate_limit_exceeded: 'Too many attempts',
    service_unavailable: 'Temporarily unavailable',
  };
  const retryAfter = Number(error.details?.retry_after);
  const messages: Record<string, string> = {
    not_found: 'This share link does not exist or is no longer available.',
    share_expired: 'This share link has expired. Ask the owner for a new one.',
    file_infected: 'This file was found to contain malware and cannot be downloaded.',
    ...(Number.isSafeInteger(retryAfter) && retryAfter > 0
      ? { rate_limit_exceeded: `Too many requests came from your network. You can try again in ${formatWait(retryAfter)}.` }
      : {}),
  };
  return { kind: 'problem', title: titles[error.code] ?? 'Something went wrong', message: messages[error.code] ?? error.message };
}

/** Whether the visitor is a browser (it prefers HTML to JSON): it gets pages, programs JSON. */
export function wantsSharePage(request: Request): boolean {
  return request.accepts(['application/json', 'text/html']) === 'text/html';
}

/**
 * A file name as the page shows it: bidirectional control characters made visible (U+FFFD). Otherwise a name such as
 * "invoice\u202Efdp.exe" would read "invoiceexe.pdf" on the service's own page, passing an executable off as a document.
 */
export function displayedFileName(name: string): string {
  return name.replace(/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '\ufffd');
}

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

/** A wait as people say it: seconds under a minute, then whole minutes (rounded up), then hours. */
export function formatWait(seconds: number): string {
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (seconds < 60) return plural(seconds, 'second');
  const minutes = Math.ceil(seconds / 60);
  return minutes < 60 ? plural(minutes, 'minute') : plural(Math.ceil(minutes / 60), 'hour');
}

/** `YYYY-MM-DD HH:MM`, rounded up to the minute so the time shown is never before the moment meant. */
function formatUtcMinute(time: Date): string {
  return new Date(Math.ceil(time.getTime() / 60_000) * 60_000).toISOString().replace('T', ' ').slice(0, 16);
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 10 ? value.toFixed(0) : value.toFixed(1)} ${units[unit]}`;
}
