import { InvalidRequest } from '../../common/errors/api-error.js';
import { parseOverwrite } from '../files/dto/file.requests.js';
import { ID_SHAPE } from '../files/dto/file.requests.js';
import { acceptedName } from '../files/file-naming.js';

/** What a resumable upload's `Upload-Metadata` asks for, with the multipart upload's rules. */
export interface ResumableUploadTarget {
  name: string;
  folderId: string | null;
  overwrite: boolean;
}

/**
 * Reads `filename` (required), `name` (overrides it), `folder_id` and `overwrite` from the parsed
 * Upload-Metadata. Other keys (tus clients add `filetype`, `relativePath`...) are kept for HEAD but
 * mean nothing here: the type is detected from the content, as for multipart uploads.
 */
export function resumableUploadTarget(metadata: Record<string, string | null> | undefined): ResumableUploadTarget {
  const filename = metadata?.filename;
  if (filename === undefined || filename === null || filename === '') {
    throw InvalidRequest.fields([{ field: 'filename', message: 'Upload-Metadata must carry filename' }]);
  }
  // As the multipart upload's commit will take it (NFC, then checked): a name refused there must be refused here, before a byte is sent.
  const name = acceptedName(metadata?.name ?? filename, metadata?.name != null ? 'name' : 'filename');
  // An empty folder_id (a key without a value, or an empty one) is the root, as an empty form field of a multipart upload is.
  const folderId = metadata?.folder_id || null;
  // As in the form: what cannot be an id (a NUL byte, which PostgreSQL refuses to compare) names no folder and is never looked up.
  if (folderId !== null && !ID_SHAPE.test(folderId)) throw InvalidRequest.fields([{ field: 'folder_id', message: 'must be a folder id' }]);
  return { name, folderId, overwrite: parseOverwrite(metadata?.overwrite ?? undefined) };
}
