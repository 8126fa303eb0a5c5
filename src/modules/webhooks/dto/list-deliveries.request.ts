import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional } from 'class-validator';
import { CursorPageRequest } from '../../../common/http/pagination.request.js';
import type { DeliveryStatus } from '../webhook-delivery.entity.js';

export class ListDeliveriesRequest extends CursorPageRequest {
  @ApiPropertyOptional({ enum: ['pending', 'succeeded', 'failed'], description: 'Only deliveries in this status.' })
  @IsOptional() @IsIn(['pending', 'succeeded', 'failed'])
  status?: DeliveryStatus;
}
