import { apiError } from '../api';

/**
 * Sends an archive to POST /v1/services/:id/source/upload with upload progress, which fetch cannot report: the one
 * call made outside the typed client. Resolves with the source (and the deploy it started).
 */
export function uploadArchive(
  serviceId: string,
  file: Blob,
  onProgress: (fraction: number) => void,
): Promise<{ id: string; deployId?: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/v1/services/${encodeURIComponent(serviceId)}/source/upload`);
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    xhr.setRequestHeader('x-requested-with', 'slipway-dashboard');
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onerror = () => reject(new Error('the upload failed: the connection to Slipway was lost'));
    xhr.onload = () => {
      let body: unknown;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = undefined;
      }
      if (xhr.status === 201) resolve(body as { id: string; deployId?: string });
      else reject(apiError(xhr.status, body));
    };
    xhr.send(file);
  });
}
