/** The stable error codes (docs/architecture.md, "API conventions") and their HTTP statuses. */
export const ERROR_STATUS = {
  bad_request: 400,
  validation_failed: 400,
  unauthorized: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  not_configured: 501,
  unavailable: 503,
} as const;
export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  field: string;
  message: string;
}

/** An error core code throws on purpose; the HTTP layer renders it as the error body. */
export class AppError extends Error {
  readonly statusCode: number;
  /** For `rate_limited` and `unavailable`: seconds until the client may retry (Retry-After). */
  retryAfterSeconds?: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.statusCode = ERROR_STATUS[code];
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);
export const forbidden = (message = 'your role does not allow this') => new AppError('forbidden', message);
export const conflict = (message: string) => new AppError('conflict', message);
export const badRequest = (message: string) => new AppError('bad_request', message);
export const unauthorized = (message = 'missing or invalid credentials') => new AppError('unauthorized', message);
