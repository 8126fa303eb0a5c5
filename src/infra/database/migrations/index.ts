import { Foundation1763780000000 } from './1763780000000-foundation.js';
import { Webhooks1763785000000 } from './1763785000000-webhooks.js';
import { FilesFoldersShares1763790000000 } from './1763790000000-files-folders-shares.js';
import { UploadReservations1763800000000 } from './1763800000000-upload-reservations.js';
import { FileMedia1763810000000 } from './1763810000000-file-media.js';
import { FileListingVersions1763910000000 } from './1763910000000-file-listing-versions.js';
import { ServerInstances1763950000000 } from './1763950000000-server-instances.js';
import { UnicodeNames1764000000000 } from './1764000000000-unicode-names.js';
import { ResumableUploads1764200000000 } from './1764200000000-resumable-uploads.js';
import { ListingVersionShards1764300000000 } from './1764300000000-listing-version-shards.js';
import { ResumableUploadProgress1764310000000 } from './1764310000000-resumable-upload-progress.js';
import { EventFeed1764320000000 } from './1764320000000-event-feed.js';
import { WebhookSecretRotation1764330000000 } from './1764330000000-webhook-secret-rotation.js';
import { NameSearchIndexes1764340000000 } from './1764340000000-name-search-indexes.js';
import { DeliveryListIndex1764350000000 } from './1764350000000-delivery-list-index.js';
import { DeliveryFirstAttemptHolder1764360000000 } from './1764360000000-delivery-first-attempt-holder.js';
import { SealedWebhookSecretsText1764370000000 } from './1764370000000-sealed-webhook-secrets-text.js';
import { FolderRings1764380000000 } from './1764380000000-folder-rings.js';
import { DeliverySeriesStart1764390000000 } from './1764390000000-delivery-series-start.js';
import { PartialStateIndexes1764400000000 } from './1764400000000-partial-state-indexes.js';
import { BlobDeletions1764410000000 } from './1764410000000-blob-deletions.js';
import { CaseFoldedNameKeys1764425000000 } from './1764425000000-case-folded-name-keys.js';
import { ListingIndexesCarryNameKey1764430000000 } from './1764430000000-listing-indexes-carry-name-key.js';

/** Every migration, oldest first. */
export const MIGRATIONS = [
  Foundation1763780000000,
  Webhooks1763785000000,
  FilesFoldersShares1763790000000,
  UploadReservations1763800000000,
  FileMedia1763810000000,
  FileListingVersions1763910000000,
  ServerInstances1763950000000,
  UnicodeNames1764000000000,
  ResumableUploads1764200000000,
  ListingVersionShards1764300000000,
  ResumableUploadProgress1764310000000,
  EventFeed1764320000000,
  WebhookSecretRotation1764330000000,
  NameSearchIndexes1764340000000,
  DeliveryListIndex1764350000000,
  DeliveryFirstAttemptHolder1764360000000,
  SealedWebhookSecretsText1764370000000,
  FolderRings1764380000000,
  DeliverySeriesStart1764390000000,
  PartialStateIndexes1764400000000,
  BlobDeletions1764410000000,
  CaseFoldedNameKeys1764425000000,
  ListingIndexesCarryNameKey1764430000000,
];
