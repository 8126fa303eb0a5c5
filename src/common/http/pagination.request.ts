import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

export const MAX_PER_PAGE = 100;
export const DEFAULT_PER_PAGE = 50;

/** `page` and `per_page`, shared by every paginated listing. */
export class PageRequest {
  @ApiPropertyOptional({ minimum: 1, default: 1, description: 'Page number, from 1.' })
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(1_000_000_000)
  page: number = 1;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_PER_PAGE, default: DEFAULT_PER_PAGE, description: 'Items per page, 1 to 100.' })
  @IsOptional() @Type(() => Number) @IsInt() @Min(1) @Max(MAX_PER_PAGE)
  per_page: number = DEFAULT_PER_PAGE;

  get offset(): number {
    return (this.page - 1) * this.per_page;
  }
}
