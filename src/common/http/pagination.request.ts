import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Matches, Max, Min, ValidateBy } from 'class-validator';

export const MAX_PER_PAGE = 100;
export const MAX_PAGE = 1_000_000_000;

/**
 * An integer query parameter: plain decimal digits, with a minus sign if any, become a number, so `-1` is refused by the
 * field's minimum with its own message; `0x10`, `1e2`, ` 1` and `1.0` stay strings and fail `@IsInt()`.
 */
export const toQueryInteger = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?[0-9]{1,12}$/.test(value) ? Number(value) : value);
export const DEFAULT_PER_PAGE = 50;

/**
 * `page`. A listing that also takes a cursor documents no `default`: Swagger UI's "Try it out" would fill the
 * default in, and a pasted cursor would then come with `page=1` and be refused.
 */
const PageNumber = (options: { documentDefault: boolean }) =>
  applyDecorators(
    ApiPropertyOptional({
      type: 'integer',
      minimum: 1,
      maximum: MAX_PAGE,
      ...(options.documentDefault ? { default: 1, description: 'Page number, from 1.' } : { description: 'Page number, from 1; 1 when omitted. Not together with `cursor`.' }),
    }),
    IsOptional(),
    Transform(toQueryInteger),
    IsInt(),
    Min(1),
    Max(MAX_PAGE),
  );

const PerPage = () =>
  applyDecorators(
    ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: MAX_PER_PAGE, default: DEFAULT_PER_PAGE, description: 'Items per page, 1 to 100.' }),
    IsOptional(),
    Transform(toQueryInteger),
    IsInt(),
    Min(1),
    Max(MAX_PER_PAGE),
  );

/** `page` and `per_page`, shared by every paginated listing. */
export class PageRequest {
  @PageNumber({ documentDefault: true })
  page: number = 1;

  @PerPage()
  per_page: number = DEFAULT_PER_PAGE;

  get offset(): number {
    return (this.page - 1) * this.per_page;
  }
}

const NotWithPage = () =>
  ValidateBy({
    name: 'notWithPage',
    validator: {
      validate: (_cursor, args) => (args?.object as CursorPageRequest | undefined)?.page === undefined,
      defaultMessage: () => 'cannot be combined with page',
    },
  });

/**
 * What a cursor looks like on the wire (list-cursor.ts): base64url payload, a dot, base64url MAC. The payload's
 * longest JSON is a 255-character name key of control characters (six bytes each, `\u0001`), an id and a count:
 * under 1,600 bytes, so under 2,140 in base64url; 2,400 leaves room.
 */
export const CURSOR_SHAPE = /^[A-Za-z0-9_-]{1,2400}\.[A-Za-z0-9_-]{22}$/;

/**
 * `page`/`per_page` or `cursor`/`per_page`: the listings that also page by keyset cursor. `page` has no
 * default value here, so that a request naming both `page` and `cursor` can be refused (a cursor says
 * where the page starts; a page number would contradict it).
 */
export class CursorPageRequest {
  @PageNumber({ documentDefault: false })
  page?: number;

  @PerPage()
  per_page: number = DEFAULT_PER_PAGE;

  @ApiPropertyOptional({
    description:
      'Continues a listing after the last item of the page that answered `pagination.next_cursor` (send the same filters, search and sort; ' +
      '`per_page` may change). Not together with `page`.',
    maxLength: 2423,
  })
  @IsOptional()
  @IsString()
  @Matches(CURSOR_SHAPE, { message: 'must be a next_cursor this listing answered' })
  @NotWithPage()
  cursor?: string;

  /** The page number asked for (1 when none was). */
  get pageNumber(): number {
    return this.page ?? 1;
  }

  get offset(): number {
    return (this.pageNumber - 1) * this.per_page;
  }
}
