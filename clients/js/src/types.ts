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
export type RevokedShare = Schemas['RevokedShareResponse'];
export type PublicShare = Schemas['PublicShareResponse'];
export type ApiKey = Schemas['ApiKeyResponse'];
export type CreatedApiKey = Schemas['CreatedApiKeyResponse'];
export type RevokedApiKey = Schemas['RevokedApiKeyResponse'];
export type UserInfo = Schemas['UserInfoResponse'];
export type Pagination = Schemas['Pagination'];

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
export type Webhook = Schemas['WebhookResponse'];
export type CreatedWebhook = Schemas['CreatedWebhookResponse'];
export type DeletedWebhook = Schemas['DeletedWebhookResponse'];
export type WebhookDelivery = Schemas['DeliveryResponse'];
