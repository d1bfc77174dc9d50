// The platform's errors as exceptions. Every API error is JSON, {"error": {"code", "message",
// "fields"}}; each status is a class of its own (as the Python client's errors.py has them).
import { retryAfterSeconds } from "./retry.js";
import type { components } from "./schema.js";

/** The body of every error answer: `{"error": {"code", "message", "fields"}}`. */
export type ErrorBody = components["schemas"]["Error"];
/** What was wrong with which field, e.g. `{"content": ["This field may not be blank."]}`. */
export type ErrorFields = ErrorBody["error"]["fields"];

/** An error answer: its `status`, and the server's `code`, `message` and `fields`. */
export class PlatformError extends Error {
  override name = "PlatformError";
  readonly status: number;
  /** The server's code: "invalid", "not_found", "rate_limited", "out_of_reach"... */
  readonly code: string;
  readonly fields: ErrorFields;
  /** The answer as it came: the error shape, or text when it was not JSON. */
  readonly body: ErrorBody | string | undefined;
  readonly response: Response | undefined;

  constructor(message: string, options: { status: number; code?: string; fields?: ErrorFields;
                                          body?: ErrorBody | string; response?: Response }) {
    super(message);
    this.status = options.status;
    this.code = options.code ?? "error";
    this.fields = options.fields ?? {};
    this.body = options.body;
    this.response = options.response;
  }
}

/** 400 or 422: the request failed validation; `fields` names what. */
export class InvalidInput extends PlatformError { override name = "InvalidInput"; }
/** 401: a missing, unknown or revoked API key. */
export class NotAuthenticated extends PlatformError { override name = "NotAuthenticated"; }
/** 403: what this key may not do (read-only, or limited to other namespaces). */
export class OutOfReach extends PlatformError { override name = "OutOfReach"; }
/** 404: nothing of that id in the key's organisation and reach. */
export class NotFound extends PlatformError { override name = "NotFound"; }
/** 409: the change contradicts the current state (a taken key, a closed session...). */
export class Conflict extends PlatformError { override name = "Conflict"; }
/** 412 or 428: a stale or missing version (If-Match). */
export class PreconditionFailed extends PlatformError { override name = "PreconditionFailed"; }
/** 429: past a rate limit, after the retries the client was allowed; `retryAfter` in seconds. */
export class RateLimited extends PlatformError {
  override name = "RateLimited";
  get retryAfter(): number | undefined {
    return retryAfterSeconds(this.response?.headers.get("Retry-After") ?? null);
  }
}
/** 5xx (503 with Retry-After while the database is out of reach). */
export class ServerError extends PlatformError { override name = "ServerError"; }

const BY_STATUS: Record<number, typeof PlatformError> = {
  400: InvalidInput, 401: NotAuthenticated, 403: OutOfReach, 404: NotFound, 409: Conflict, 412: PreconditionFailed,
  422: InvalidInput, 428: PreconditionFailed, 429: RateLimited,
};

function isErrorBody(body: unknown): body is ErrorBody {
  const error = (body as { error?: unknown } | null)?.error;
  return typeof error === "object" && error !== null && typeof (error as { message?: unknown }).message === "string";
}

/** The exception an error answer stands for, from its body as openapi-fetch read it (JSON, or text). */
export function errorFrom(response: Response, body: unknown): PlatformError {
  const kind = BY_STATUS[response.status] ?? (response.status >= 500 ? ServerError : PlatformError);
  if (isErrorBody(body)) {
    const { code, message, fields } = body.error;
    return new kind(message, { status: response.status, code, fields: fields ?? {}, body, response });
  }
  const text = typeof body === "string" ? body : body === undefined ? "" : JSON.stringify(body);
  return new kind(text || response.statusText || `HTTP ${response.status}`,
                  { status: response.status, body: typeof body === "string" ? body : undefined, response });
}
