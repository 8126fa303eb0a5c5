import { describe, expect, it } from 'vitest';
import { ConfigurationError, loadConfig } from '../../config/app-config.js';

describe('media configuration', () => {
  it("looks for clamd at Debian's default socket, and has the documented media defaults, when nothing is set", () => {
    const config = loadConfig({});
    expect(config.clamav).toEqual({ socket: '/run/clamav/clamd.ctl', configured: false, timeoutMs: 120_000, maxStreamBytes: 25 * 1024 * 1024 });
    expect(config.media).toEqual({
      ffmpegPath: 'ffmpeg',
      pdftoppmPath: 'pdftoppm',
      thumbnailConcurrency: 2,
      scanConcurrency: 4,
      maxInputPixels: 100_000_000,
      maxDecodeMb: 256,
      toolTimeoutMs: 30_000,
      toolMemoryMb: 2048,
      retryDelayMs: 5_000,
    });
  });

  it('talks to clamd over TCP (port 3310 unless given) or a UNIX socket, the socket winning', () => {
    const defaults = { configured: true, timeoutMs: 120_000, maxStreamBytes: 25 * 1024 * 1024 };
    expect(loadConfig({ CLAMAV_HOST: 'clamav' }).clamav).toEqual({ host: 'clamav', port: 3310, ...defaults });
    expect(loadConfig({ CLAMAV_HOST: '10.0.0.5', CLAMAV_PORT: '3311', CLAMAV_TIMEOUT_MS: '5000', CLAMAV_MAX_STREAM_BYTES: '104857600' }).clamav).toEqual({
      host: '10.0.0.5',
      port: 3311,
      configured: true,
      timeoutMs: 5000,
      maxStreamBytes: 104_857_600,
    });
    expect(loadConfig({ CLAMAV_SOCKET: '/run/clamav/clamd.ctl', CLAMAV_HOST: 'ignored' }).clamav).toEqual({ socket: '/run/clamav/clamd.ctl', ...defaults });
  });

  it('names each bad media variable', () => {
    expect(() => loadConfig({ CLAMAV_PORT: '70000', CLAMAV_SOCKET: 'relative.sock', THUMBNAIL_CONCURRENCY: '0' })).toThrow(ConfigurationError);
    try {
      loadConfig({ CLAMAV_PORT: '70000', CLAMAV_SOCKET: 'relative.sock', THUMBNAIL_CONCURRENCY: '0' });
    } catch (error) {
      const text = (error as ConfigurationError).problems.join('\n');
      expect(text).toMatch(/CLAMAV_PORT/);
      expect(text).toMatch(/CLAMAV_SOCKET/);
      expect(text).toMatch(/THUMBNAIL_CONCURRENCY/);
    }
  });
});
