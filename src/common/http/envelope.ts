import { ApiProperty } from '@nestjs/swagger';

/** The pagination object of the specification. */
export class Pagination {
  @ApiProperty({ example: 1 }) page: number;
  @ApiProperty({ example: 50 }) per_page: number;
  @ApiProperty({ example: 120 }) total_items: number;
  @ApiProperty({ example: 3 }) total_pages: number;

  static of(page: number, perPage: number, totalItems: number): Pagination {
    return Object.assign(new Pagination(), {
      page,
      per_page: perPage,
      total_items: totalItems,
      total_pages: Math.ceil(totalItems / perPage),
    });
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

export interface SuccessEnvelope<T> {
  success: true;
  data: T;
  pagination?: Pagination;
}

export interface ErrorEnvelope {
  success: false;
  error: { code: string; message: string; details?: Record<string, unknown> };
}

export function successEnvelope<T>(result: T | Page<T>): SuccessEnvelope<T | T[]> {
  if (result instanceof Page) return { success: true, data: result.items, pagination: result.pagination };
  return { success: true, data: result as T };
}
