import type { components, operations } from './generated/openapi.js';

type Schemas = components['schemas'];

export type FileObject = Schemas['FileResponse'];
export type DeletedFile = Schemas['DeletedFileResponse'];
export type RestoredFile = Schemas['RestoredFileResponse'];
export type BulkDeleteResult = Schemas['BulkDeleteResponse'];
export type Folder = Schemas['FolderResponse'];
export type DeletedFolder = Schemas['DeletedFolderResponse'];
export type TrashedFile = Schemas['TrashedFileResponse'];
export type EmptiedTrash = Schemas['EmptiedTrashResponse'];
export type Share = Schemas['ShareResponse'];
/** A share link as listings and `shares.get` show it: the created link plus its status and last access. */
export type ShareStatus = Schemas['ShareStatusResponse'];
export type RevokedShare = Schemas['RevokedShareResponse'];
export type PublicShare = Schemas['PublicShareResponse'];
export type ApiKey = Schemas['ApiKeyResponse'];
export type CreatedApiKey = Schemas['CreatedApiKeyResponse'];
export type RevokedApiKey = Schemas['RevokedApiKeyResponse'];
export type UserInfo = Schemas['UserInfoResponse'];
export type Pagination = Schemas['Pagination'];
/** The pagination of the listings that also page by cursor: `next_cursor` (null on the last page) goes back as `cursor`. */
export type CursorPagination = Schemas['CursorPagination'];

/** The query parameters of an operation, as openapi.json states them. */
export type QueryOf<Op extends keyof operations> = NonNullable<operations[Op]['parameters']['query']>;
/** The JSON body of an operation, as openapi.json states it. */
export type BodyOf<Op extends keyof operations> = operations[Op] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
/** The `data` of an operation's success answer. */
export type DataOf<Op extends keyof operations> = SuccessBody<operations[Op]['responses']> extends { data: infer D } ? D : never;

type SuccessBody<R> = {
  [S in keyof R]: S extends 200 | 201 | 202 ? (R[S] extends { content: { 'application/json': infer B } } ? B : never) : never;
}[keyof R];

/** One page of a listing. */
export interface Page<T> {
  data: T[];
  pagination: Pagination;
}

/** One page of a listing that also pages by cursor (files, folders, trash, shares, webhook deliveries). */
export interface CursorPage<T> {
  data: T[];
  pagination: CursorPagination;
}
export type Webhook = Schemas['WebhookResponse'];
export type CreatedWebhook = Schemas['CreatedWebhookResponse'];
export type DeletedWebhook = Schemas['DeletedWebhookResponse'];
export type RotatedWebhookSecret = Schemas['RotatedWebhookSecretResponse'];
export type WebhookDelivery = Schemas['DeliveryResponse'];
export type ReplayQueued = Schemas['ReplayQueuedResponse'];
/** One event of the feed (GET /v1/events): the delivery envelope plus the stable event `id`. */
export type FeedEvent = Schemas['EventResponse'];
/** One answer of the event feed: its events and the cursor to read on from. */
export interface EventPage {
  data: FeedEvent[];
  next_cursor: string;
}
