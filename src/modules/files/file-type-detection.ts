import { fileTypeFromBuffer } from 'file-type';
import type { FileCategory } from './file.entity.js';

/** How many leading bytes content sniffing needs (file-type's own sample size). */
export const SNIFF_BYTES = 4100;

const BY_EXTENSION: Record<string, string> = {
  txt: 'text/plain', text: 'text/plain', log: 'text/plain', md: 'text/markdown', csv: 'text/csv', tsv: 'text/tab-separated-values',
  html: 'text/html', htm: 'text/html', css: 'text/css', js: 'text/javascript', mjs: 'text/javascript', json: 'application/json',
  xml: 'application/xml', yaml: 'application/yaml', yml: 'application/yaml', svg: 'image/svg+xml', ics: 'text/calendar',
  pdf: 'application/pdf', rtf: 'application/rtf', doc: 'application/msword', xls: 'application/vnd.ms-excel',
  ppt: 'application/vnd.ms-powerpoint',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  odt: 'application/vnd.oasis.opendocument.text', ods: 'application/vnd.oasis.opendocument.spreadsheet',
  odp: 'application/vnd.oasis.opendocument.presentation',
  png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif', webp: 'image/webp', bmp: 'image/bmp',
  tif: 'image/tiff', tiff: 'image/tiff', heic: 'image/heic', avif: 'image/avif', ico: 'image/x-icon',
  mp4: 'video/mp4', m4v: 'video/x-m4v', mov: 'video/quicktime', webm: 'video/webm', mkv: 'video/x-matroska', avi: 'video/x-msvideo',
  mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg', oga: 'audio/ogg', flac: 'audio/flac', m4a: 'audio/mp4', aac: 'audio/aac',
  zip: 'application/zip', tar: 'application/x-tar', gz: 'application/gzip', tgz: 'application/gzip', bz2: 'application/x-bzip2',
  xz: 'application/x-xz', '7z': 'application/x-7z-compressed', rar: 'application/vnd.rar',
};

const DOCUMENT_TYPES = new Set([
  'application/pdf',
  'application/rtf',
  'text/rtf',
  'application/msword',
  'application/vnd.ms-excel',
  'application/vnd.ms-powerpoint',
]);
const ARCHIVE_TYPES = new Set([
  'application/zip',
  'application/x-zip-compressed',
  'application/x-tar',
  'application/gzip',
  'application/x-gzip',
  'application/x-bzip2',
  'application/x-xz',
  'application/x-7z-compressed',
  'application/vnd.rar',
  'application/x-rar-compressed',
]);

/**
 * The MIME type of an upload: from its first bytes (magic numbers), else from the name's
 * extension, else application/octet-stream. The client's Content-Type is never trusted.
 */
export async function detectMimeType(head: Buffer, name: string): Promise<string> {
  const sniffed = head.length > 0 ? await fileTypeFromBuffer(head).catch(() => undefined) : undefined;
  const extension = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : '';
  const byName = BY_EXTENSION[extension];
  if (sniffed) {
    // Office/OpenDocument files are zips underneath; when sniffing only sees the zip, the extension knows better.
    if (sniffed.mime === 'application/zip' && byName && categoryOf(byName) === 'document') return byName;
    return sniffed.mime;
  }
  return byName ?? 'application/octet-stream';
}

/** The category of a MIME type (docs/files.md, "Upload"). */
export function categoryOf(mimeType: string): FileCategory {
  const type = mimeType.toLowerCase().split(';')[0].trim();
  if (type.startsWith('image/')) return 'image';
  if (type.startsWith('video/')) return 'video';
  if (type.startsWith('audio/')) return 'audio';
  if (type.startsWith('text/') || DOCUMENT_TYPES.has(type)) return 'document';
  if (type.startsWith('application/vnd.openxmlformats-officedocument.') || type.startsWith('application/vnd.oasis.opendocument.')) return 'document';
  if (ARCHIVE_TYPES.has(type)) return 'archive';
  return 'other';
}
