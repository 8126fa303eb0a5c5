import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';

export const MAX_PER_PAGE = 100;

/** Plain decimal digits only: `0x10`, `1e2`, ` 1` and `1.0` stay strings and fail `@IsInt()`. */
const toInteger = ({ value }: { value: unknown }) => (typeof value === 'string' && /^[0-9]{1,12}$/.test(value) ? Number(value) : value);
export const DEFAULT_PER_PAGE = 50;

/** `page` and `per_page`, shared by every paginated listing. */
export class PageRequest {
  @ApiPropertyOptional({ minimum: 1, default: 1, description: 'Page number, from 1.' })
  @IsOptional() @Transform(toInteger) @IsInt() @Min(1) @Max(1_000_000_000)
  page: number = 1;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_PER_PAGE, default: DEFAULT_PER_PAGE, description: 'Items per page, 1 to 100.' })
  @IsOptional() @Transform(toInteger) @IsInt() @Min(1) @Max(MAX_PER_PAGE)
  per_page: number = DEFAULT_PER_PAGE;

  get offset(): number {
    return (this.page - 1) * this.per_page;
  }
}
