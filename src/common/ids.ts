import { v7 as uuidv7 } from 'uuid';

export type IdPrefix = 'usr' | 'acc' | 'key' | 'file' | 'fld' | 'shr' | 'wh' | 'dlv' | 'evt' | 'upl' | 'srv';

/** An opaque, type-prefixed id; UUIDv7 underneath, so ids sort by creation time. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${uuidv7().replaceAll('-', '')}`;
}
