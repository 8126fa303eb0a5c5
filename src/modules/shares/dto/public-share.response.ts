import { ApiProperty } from '@nestjs/swagger';
import type { UsableShare } from '../share-lookup.js';

export class PublicSharedFile {
  @ApiProperty({ example: 'report.pdf' }) name: string;
  @ApiProperty({ type: 'integer', example: 1048576, description: 'Bytes.' }) size: number;
  @ApiProperty({ example: 'application/pdf' }) type: string;
}

/** What anyone holding the link (and its password) learns about the shared file. */
export class PublicShareResponse {
  @ApiProperty({ type: PublicSharedFile }) file: PublicSharedFile;
  @ApiProperty({ format: 'date-time', example: null, nullable: true, type: String }) expires_at: string | null;
  @ApiProperty({ example: false }) password_protected: boolean;
  @ApiProperty({ example: 'https://files.example.com/s/5mR1m2q0aWJ0Xk9yQm5hVGhHc2ZqS2tQZ3RlM3dYcA/download', description: 'Where to download the file (send the password again).' })
  download_url: string;

  static from({ share, file }: UsableShare, downloadUrl: string): PublicShareResponse {
    return Object.assign(new PublicShareResponse(), {
      file: { name: file.name, size: file.size, type: file.mimeType },
      expires_at: share.expiresAt?.toISOString() ?? null,
      password_protected: share.passwordHash !== null,
      download_url: downloadUrl,
    });
  }
}
