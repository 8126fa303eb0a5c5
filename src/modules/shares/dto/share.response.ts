import { ApiProperty } from '@nestjs/swagger';
import type { ShareEntity } from '../share.entity.js';

/** The share record of docs/shares.md, as POST /v1/shares answers it. */
export class ShareResponse {
  @ApiProperty({ example: 'shr_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) id: string;
  @ApiProperty({ example: 'https://files.example.com/s/5mR1m2q0aWJ0Xk9yQm5hVGhHc2ZqS2tQZ3RlM3dYcA', description: 'Public link: PUBLIC_BASE_URL/s/{token}.' })
  url: string;
  @ApiProperty({ example: 'file_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) file_id: string;
  @ApiProperty({ example: true }) password_protected: boolean;
  @ApiProperty({ format: 'date-time', example: '2026-11-28T10:00:00.000Z', nullable: true, type: String, description: 'null when the link does not expire.' })
  expires_at: string | null;
  @ApiProperty({ example: 'usr_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b', description: 'The user who created the link.' }) created_by: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ type: 'integer', example: 0, description: 'Successful views and downloads through the link.' }) access_count: number;

  static from(share: ShareEntity, publicBaseUrl: string): ShareResponse {
    return Object.assign(new ShareResponse(), ShareResponse.fields(share, publicBaseUrl));
  }

  protected static fields(share: ShareEntity, publicBaseUrl: string) {
    return {
      id: share.id,
      url: shareUrl(publicBaseUrl, share.token),
      file_id: share.fileId,
      password_protected: share.passwordHash !== null,
      expires_at: share.expiresAt?.toISOString() ?? null,
      created_by: share.createdBy,
      created_at: share.createdAt.toISOString(),
      access_count: share.accessCount,
    };
  }
}

/** A share link in a listing: the record plus whether and why it still works. */
export class ShareStatusResponse extends ShareResponse {
  @ApiProperty({ example: true, description: 'The link works now: not revoked, not invalidated, not expired.' }) active: boolean;
  @ApiProperty({ format: 'date-time', example: null, nullable: true, type: String, description: 'When the owner revoked the link.' }) revoked_at: string | null;
  @ApiProperty({ format: 'date-time', example: null, nullable: true, type: String, description: 'When the file went to trash or was deleted; restoring the file does not clear it.' })
  invalidated_at: string | null;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T12:00:00.000Z', nullable: true, type: String }) last_accessed_at: string | null;

  static withStatus(share: ShareEntity, publicBaseUrl: string, now: Date): ShareStatusResponse {
    return Object.assign(new ShareStatusResponse(), ShareResponse.fields(share, publicBaseUrl), {
      active: share.isActive(now),
      revoked_at: share.revokedAt?.toISOString() ?? null,
      invalidated_at: share.invalidatedAt?.toISOString() ?? null,
      last_accessed_at: share.lastAccessedAt?.toISOString() ?? null,
    });
  }
}

export class RevokedShareResponse {
  @ApiProperty({ example: 'shr_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) id: string;
  @ApiProperty({ example: true }) revoked: boolean;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) revoked_at: string;
}

export function shareUrl(publicBaseUrl: string, token: string): string {
  return `${publicBaseUrl}/s/${token}`;
}
