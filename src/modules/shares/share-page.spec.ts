import { describe, expect, it } from 'vitest';
import { TooManyPasswordAttempts } from './password-attempts.js';
import { displayedFileName, escapeHtml, formatSize, formatWait, lockedPage, renderSharePage } from './share-page.js';

describe('share page', () => {
  it('escapes a hostile file name everywhere it appears', () => {
    const name = `<script>alert("x")</script>'&.txt`;
    const html = renderSharePage({ kind: 'file', downloadPath: '/s/t/download', name, size: 5, mimeType: 'text/plain', expiresAt: null });
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;.txt');
  });

  it('shows bidirectional controls in a file name instead of letting them reorder it', () => {
    expect(displayedFileName('invoice\u202efdp.exe')).toBe('invoice\ufffdfdp.exe');
    for (const control of ['\u061c', '\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u2066', '\u2067', '\u2068', '\u2069']) {
      expect(displayedFileName(`a${control}b`), escape(control)).toBe('a\ufffdb');
    }
    // Right-to-left scripts and emoji (joined with U+200D) are names, not tricks.
    expect(displayedFileName('תמונה 👩\u200d💻.png')).toBe('תמונה 👩\u200d💻.png');
  });

  it('escapes the five HTML-significant characters', () => {
    expect(escapeHtml(`&<>"'`)).toBe('&amp;&lt;&gt;&quot;&#39;');
  });

  it('asks for the password with a POST form, never in the URL', () => {
    const html = renderSharePage({ kind: 'password', downloadPath: '/s/' + 'b'.repeat(43) + '/download', error: 'Wrong password.' });
    expect(html).toContain(`<form method="post" action="/s/${'b'.repeat(43)}/download">`);
    expect(html).toContain('type="password"');
    expect(html).toContain('Wrong password.');
  });

  it('writes sizes the way people read them', () => {
    expect(formatSize(0)).toBe('0 B');
    expect(formatSize(1023)).toBe('1023 B');
    expect(formatSize(1536)).toBe('1.5 KB');
    expect(formatSize(20 * 1024 * 1024)).toBe('20 MB');
  });

  it('tells a locked-out visitor when to come back, without a form', () => {
    const now = new Date('2026-11-27T19:30:20.000Z');
    const html = renderSharePage(lockedPage(new TooManyPasswordAttempts(900), now, true));
    expect(html).not.toContain('<form');
    expect(html).toContain('That password is not right.');
    expect(html).toContain('from your network');
    // 19:45:20 shown as 19:46: never before the moment meant.
    expect(html).toContain('You can try again in 15 minutes, after 2026-11-27 19:46 UTC.');
    expect(renderSharePage(lockedPage(new TooManyPasswordAttempts(4, 'link'), now))).toContain('You can try again in 4 seconds.');
  });

  it('writes waits the way people say them', () => {
    expect(formatWait(1)).toBe('1 second');
    expect(formatWait(59)).toBe('59 seconds');
    expect(formatWait(60)).toBe('1 minute');
    expect(formatWait(61)).toBe('2 minutes');
    expect(formatWait(900)).toBe('15 minutes');
    expect(formatWait(3600)).toBe('1 hour');
  });
});
