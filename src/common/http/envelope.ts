import { ApiProperty } from '@nestjs/swagger';

/** The pagination object of the specification. */
export class Pagination {
  @ApiProperty({ type: 'integer', example: 1 }) page: number;
  @ApiProperty({ type: 'integer', example: 50 }) per_page: number;
  @ApiProperty({ type: 'integer', example: 120 }) total_items: number;
  @ApiProperty({ type: 'integer', example: 3 }) total_pages: number;

  static of(page: number, perPage: number, totalItems: number): Pagination {
    return Object.assign(new Pagination(), {
      page,
      per_page: perPage,
      total_items: totalItems,
      total_pages: Math.ceil(totalItems / perPage),
    });
  }
}

/** The pagination object of the listings that also page by cursor: the specification's four fields and `next_cursor`. */
export class CursorPagination extends Pagination {
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'WzEsIjIwMjYtMTEtMjRUMTA6MDA6MDAuMDAwWiIsImZpbGVfMDE5MyIsNTBd.q5BvOw2cZmC3c0Gx0dXJbA',
    description: 'Send as `cursor` (with the same filters, search and sort) for the page after this one; null on the last page.',
  })
  next_cursor: string | null;

  static after(page: number, perPage: number, totalItems: number, nextCursor: string | null): CursorPagination {
    return Object.assign(new CursorPagination(), { ...Pagination.of(page, perPage, totalItems), next_cursor: nextCursor });
  }
}

/** What a list query returns; the envelope interceptor turns it into `{success, data, pagination}`. */
export class Page<T> {
  constructor(
    readonly items: T[],
    readonly pagination: Pagination,
  ) {}

  map<U>(fn: (item: T) => U): Page<U> {
    return new Page(this.items.map(fn), this.pagination);
  }
}

/** What a cursor-paged query returns; the envelope interceptor turns it into `{success, data, next_cursor}`. */
export class CursorPage<T> {
  constructor(
    readonly items: T[],
    readonly nextCursor: string,
  ) {}
}

export interface SuccessEnvelope<T> {
  success: true;
  data: T;
  pagination?: Pagination;
  next_cursor?: string;
}

export interface ErrorEnvelope {
  success: false;
  error: { code: string; message: string; details?: Record<string, unknown> };
}

export function successEnvelope<T>(result: T | Page<T>): SuccessEnvelope<T | T[]> {
  if (result instanceof Page) return { success: true, data: result.items, pagination: result.pagination };
  if (result instanceof CursorPage) return { success: true, data: result.items, next_cursor: result.nextCursor };
  return { success: true, data: result as T };
}
