import type { TestApp } from './test-app.js';

export interface UploadOptions {
  name?: string;
  folderId?: string;
  overwrite?: boolean;
  /** File name sent in the multipart part. */
  filename?: string;
  /** Send the form fields after the file part instead of before it. */
  fieldsAfterFile?: boolean;
}

/** Uploads through the real route (POST /v1/files/upload) and returns the raw response. */
export async function upload(t: TestApp, auth: Record<string, string>, content: Buffer | string, options: UploadOptions = {}) {
  const body = Buffer.isBuffer(content) ? content : Buffer.from(content);
  const form = new FormData();
  const fields: Array<[string, string]> = [];
  if (options.name !== undefined) fields.push(['name', options.name]);
  if (options.folderId !== undefined) fields.push(['folder_id', options.folderId]);
  if (options.overwrite !== undefined) fields.push(['overwrite', String(options.overwrite)]);
  if (!options.fieldsAfterFile) for (const [k, v] of fields) form.append(k, v);
  form.append('file', new Blob([body]), options.filename ?? 'file.bin');
  if (options.fieldsAfterFile) for (const [k, v] of fields) form.append(k, v);
  const response = await fetch(`${t.baseUrl}/v1/files/upload`, { method: 'POST', headers: auth, body: form });
  const json = (await response.json()) as { success: boolean; data?: any; error?: { code: string; message: string; details?: any } };
  return { status: response.status, body: json, headers: response.headers };
}

/** Uploads and expects success; returns the File object. */
export async function uploadOk(t: TestApp, auth: Record<string, string>, content: Buffer | string, options: UploadOptions = {}) {
  const res = await upload(t, auth, content, options);
  if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}
