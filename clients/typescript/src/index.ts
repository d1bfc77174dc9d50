export { API_PREFIX, MemoryPlatform, serverUrl } from "./client.js";
export type { Answer, DataMethod, Media, MemoryPlatformOptions } from "./client.js";
export {
  Conflict, errorFrom, InvalidInput, NotAuthenticated, NotFound, OutOfReach, PlatformError, PreconditionFailed,
  RateLimited, ServerError,
} from "./errors.js";
export type { ErrorBody, ErrorFields } from "./errors.js";
export { DEFAULT_MAX_DELAY, DEFAULT_MAX_RETRIES, retryAfterSeconds, retryDelay, retrying } from "./retry.js";
export type { Retry, RetryOptions } from "./retry.js";
export type { components, operations, paths } from "./schema.js";

import type { components } from "./schema.js";
/** The schema's named shapes: `Schemas["Memory"]`, `Schemas["SearchResponse"]`... */
export type Schemas = components["schemas"];
