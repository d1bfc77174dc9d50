// Answers that ask for the request again, sent again after the wait they name: 429 (past a rate
// limit: refused before anything ran) and 503 with Retry-After (the database out of reach, or a
// deadlock the server rolled back: nothing was changed). Anything else is answered as it came.

export interface RetryOptions {
  /** How many times one request is sent again; 0 never retries. Default 3. */
  maxRetries?: number;
  /** The longest wait, in seconds: an answer asking for more is not waited for (it is thrown). Default 60. */
  maxDelay?: number;
  /** Called before each wait (for logs and metrics). */
  onRetry?: (retry: Retry) => void;
}

export interface Retry {
  /** 1 for the first retry. */
  attempt: number;
  /** The status that asked for it: 429 or 503. */
  status: number;
  /** The seconds waited before sending it again (Retry-After's, or a backoff's when a 429 had none). */
  delay: number;
  request: Request;
}

export const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_MAX_DELAY = 60;

/** Retry-After as seconds to wait: a number of seconds, or an HTTP date; undefined when absent or unreadable. */
export function retryAfterSeconds(header: string | null, now: number = Date.now()): number | undefined {
  const text = header?.trim();
  if (!text) return undefined;
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text);
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

/** The seconds to wait before sending again what got this answer; undefined: do not. */
export function retryDelay(response: Response, attempt: number): number | undefined {
  const asked = retryAfterSeconds(response.headers.get("Retry-After"));
  if (response.status === 429) return asked ?? 2 ** attempt;
  if (response.status === 503) return asked;
  return undefined;
}

function sleep(seconds: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, seconds * 1000);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** `send`, sending a request again while the answer asks for it (each time a copy: a body is read once). */
export function retrying(send: (request: Request) => Promise<Response>,
                         options: RetryOptions = {}): (request: Request) => Promise<Response> {
  const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
  const maxDelay = options.maxDelay ?? DEFAULT_MAX_DELAY;
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      const response = await send(attempt < maxRetries ? request.clone() : request);
      const delay = attempt < maxRetries ? retryDelay(response, attempt) : undefined;
      if (delay === undefined || delay > maxDelay) return response;
      await response.body?.cancel();
      options.onRetry?.({ attempt: attempt + 1, status: response.status, delay, request });
      await sleep(delay, request.signal);
    }
  };
}
