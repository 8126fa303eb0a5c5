export { FileStorage } from './client.js';
export type { FileStorageOptions, CallOptions } from './http.js';
export type { PostOptions, UploadOptions, ShareAccessOptions, ByteRangeOptions, EventListQuery, EventTail, ResumableUploadOptions, Uploads, ResumableUpload } from './resources.js';
export type { UploadSource, UploadProgress } from './upload-source.js';
export { verifyStandardWebhook, verifyWebhookSignature, type StandardWebhookOptions, type WebhookHeaders } from './webhook-signature.js';
export * from './errors.js';
export type * from './types.js';
export type { paths, components, operations } from './generated/openapi.js';
