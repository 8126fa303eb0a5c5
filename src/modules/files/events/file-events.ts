import type { DomainEvent } from '../../../infra/outbox/domain-event.js';
import { domainEvent } from '../../../infra/outbox/outbox.js';
import type { FileEntity } from '../file.entity.js';

/** Outbox payloads, nested as the specification's event table reads (docs/files.md, "Events"). */

export function fileUploaded(file: FileEntity, at: Date): DomainEvent {
  return domainEvent('file.uploaded', file.accountId, at, {
    file: {
      id: file.id,
      name: file.name,
      size: file.size,
      type: file.mimeType,
      folder_id: file.folderId,
      uploaded_by: file.uploadedBy,
      created_at: file.createdAt.toISOString(),
    },
  });
}

export function fileDeleted(file: FileEntity, deletedBy: string, deletedAt: Date, permanent: boolean): DomainEvent {
  return domainEvent('file.deleted', file.accountId, deletedAt, {
    file: { id: file.id, name: file.name, deleted_by: deletedBy, deleted_at: deletedAt.toISOString(), permanent },
  });
}

export function storageWarning(
  accountId: string,
  at: Date,
  storage: { used: number; limit: number; percentage: number; threshold: number },
): DomainEvent {
  return domainEvent('storage.warning', accountId, at, {
    storage: { used: storage.used, limit: storage.limit, percentage: storage.percentage, threshold: `${storage.threshold}%` },
  });
}

export function quotaExceeded(accountId: string, at: Date, storage: { used: number; limit: number; overage: number }): DomainEvent {
  return domainEvent('user.quota_exceeded', accountId, at, { storage, action_required: true });
}
