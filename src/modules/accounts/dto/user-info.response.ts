import { ApiProperty } from '@nestjs/swagger';
import { PLAN_NAMES, type PlanName } from '../plans.js';
import { SCOPES, type Scope } from '../../../common/auth/scopes.js';
import type { Scanning } from '../../media/scanning/virus-scanner.js';

export class StorageUsage {
  @ApiProperty({ type: 'integer', example: 1048576, description: 'Bytes held by active and trashed files.' }) used: number;
  @ApiProperty({ type: 'integer', example: 10737418240 }) limit: number;
  @ApiProperty({ type: 'integer', example: 10736369664, description: 'Bytes an upload can still take: limit − used − bytes reserved by uploads in progress (resumable uploads reserve their Upload-Length).' }) available: number;
  @ApiProperty({ example: 0, description: 'used / limit × 100, rounded down.' }) percentage: number;
}

export class PlanLimits {
  @ApiProperty({ type: 'integer', example: 60 }) requests_per_minute: number;
  @ApiProperty({ type: 'integer', example: 104857600 }) max_file_size: number;
}

export class CallingKey {
  @ApiProperty() id: string;
  @ApiProperty({ enum: SCOPES, isArray: true }) scopes: Scope[];
  @ApiProperty() elevated: boolean;
}

export class UserInfoResponse {
  @ApiProperty({ example: 'usr_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) id: string;
  @ApiProperty({ example: 'acc_0193a5b2c4d67e8f9a0b1c2d3e4f5a6b' }) account_id: string;
  @ApiProperty({ example: 'Ada' }) name: string;
  @ApiProperty({ enum: PLAN_NAMES }) plan: PlanName;
  @ApiProperty({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' }) created_at: string;
  @ApiProperty({ type: StorageUsage }) storage: StorageUsage;
  @ApiProperty({ type: PlanLimits }) limits: PlanLimits;
  @ApiProperty({ type: CallingKey }) key: CallingKey;
  @ApiProperty({
    enum: ['active', 'unavailable'],
    description:
      'Whether new uploads are being virus-scanned now. "unavailable": no scanner answers, so files are not scanned ' +
      '(marked `scan_status` "skipped" when none is set up, or left "pending" until a configured one is back).',
  })
  scanning: Scanning;
}
