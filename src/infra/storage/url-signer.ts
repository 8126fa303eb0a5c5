import { createHmac, timingSafeEqual } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';

export const SIGNED_URL_LIFETIME_SECONDS = 3600;
const MAX_REMEMBERED_SIGNATURES = 10_000;

/**
 * Signs URLs that work without an API key (downloads, thumbnails): HMAC-SHA256 with
 * URL_SIGNING_SECRET over the path and the expiry, so neither can be changed.
 */
@Injectable()
export class UrlSigner {
  /**
   * Signatures made for the current `expires` second: a listing signs a URL per file, and repeated
   * listings within the same second would otherwise compute the same HMACs again.
   */
  private readonly recent = new Map<string, string>();
  private recentExpires = 0;

  constructor(private readonly config: AppConfig) {}

  /** `PUBLIC_BASE_URL + path?expires=<unix>&signature=<hex>`, valid for `lifetimeSeconds` from `now`. */
  sign(path: string, now: Date, lifetimeSeconds = SIGNED_URL_LIFETIME_SECONDS): string {
    const expires = Math.floor(now.getTime() / 1000) + lifetimeSeconds;
    if (expires !== this.recentExpires || this.recent.size >= MAX_REMEMBERED_SIGNATURES) {
      this.recent.clear();
      this.recentExpires = expires;
    }
    let signature = this.recent.get(path);
    if (signature === undefined) {
      signature = this.signature(path, expires);
      this.recent.set(path, signature);
    }
    return `${this.config.publicBaseUrl}${path}?expires=${expires}&signature=${signature}`;
  }

  /** True when `signature` was made by `sign` for this path and `expires` has not passed. */
  verify(path: string, expires: string | undefined, signature: string | undefined, now: Date): boolean {
    if (!expires || !signature || !/^\d{1,12}$/.test(expires) || !/^[0-9a-f]{64}$/.test(signature)) return false;
    if (Number(expires) * 1000 < now.getTime()) return false;
    const expected = Buffer.from(this.signature(path, Number(expires)), 'hex');
    return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
  }

  private signature(path: string, expires: number): string {
    return createHmac('sha256', this.config.urlSigningSecret).update(`${path}\n${expires}`).digest('hex');
  }
}
