import { createHmac } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config.js';
import { InvalidRequest } from '../../common/errors/api-error.js';
import { matchesBase64urlMac } from '../../common/mac.js';

const MAC_BYTES = 16;

/**
 * The opaque `next_cursor` of the event feed: a feed position, bound to the account it was issued to and
 * signed with URL_SIGNING_SECRET (like signed URLs), so a client can neither forge nor alter one, nor use
 * another account's. Format `<position base36>.<base64url HMAC>`; clients must not rely on it.
 */
@Injectable()
export class EventFeedCursor {
  constructor(private readonly config: AppConfig) {}

  encode(accountId: string, position: number): string {
    return `${position.toString(36)}.${this.mac(accountId, position).toString('base64url')}`;
  }

  /** The position a cursor stands for; a 400 naming `after` when it is malformed, altered or another account's. */
  decode(accountId: string, cursor: string): number {
    const match = /^([0-9a-z]{1,12})\.([A-Za-z0-9_-]{22})$/.exec(cursor);
    const position = match ? parseInt(match[1], 36) : NaN;
    // Only exactly as issued: `042.<mac>` stands for 42 too, but was never handed out.
    if (!match || !Number.isSafeInteger(position) || position.toString(36) !== match[1] || !matchesBase64urlMac(match[2], this.mac(accountId, position))) {
      throw InvalidRequest.fields([{ field: 'after', message: 'is not a cursor this service issued to this account' }]);
    }
    return position;
  }

  private mac(accountId: string, position: number): Buffer {
    return createHmac('sha256', this.config.urlSigningSecret).update(`event-feed\n${accountId}\n${position}`).digest().subarray(0, MAC_BYTES);
  }
}
