import { describe, expect, it } from 'vitest';
import { escapeHtml, formatSize, renderSharePage } from './share-page.js';

describe('share page', () => {
  it('escapes a hostile file name everywhere it appears', () => {
    const name = `<script>alert("x")</script>'&.txt`;
    const html = renderSharePage({ kind: 'file', downloadPath: '/s/t/download', name, size: 5, mimeType: 'text/plain', expiresAt: null });
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;.txt');
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
});
