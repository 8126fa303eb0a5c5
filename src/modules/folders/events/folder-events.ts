import type { DomainEvent } from '../../../infra/outbox/domain-event.js';
import { domainEvent } from '../../../infra/outbox/outbox.js';
import type { FolderEntity } from '../folder.entity.js';

/** The folder.created outbox payload (docs/files.md, "Events"). */
export function folderCreated(folder: FolderEntity): DomainEvent {
  return domainEvent('folder.created', folder.accountId, folder.createdAt, {
    folder: { id: folder.id, name: folder.name, parent_id: folder.parentId, created_by: folder.createdBy },
  });
}
