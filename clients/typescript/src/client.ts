// The REST API (/api/v1) through openapi-fetch, typed by the schema openapi-typescript generated
// (schema.ts): what this file adds is the API key, the server's URL, the retries a 429 asks for
// (retry.ts) and, in the methods that answer the data alone, error answers thrown as
// PlatformError (errors.ts). Every path, parameter, body and answer is the schema's.
import createClient, { type Client, type FetchResponse, type MaybeOptionalInit } from "openapi-fetch";
import type { HttpMethod, PathsWithMethod, RequiredKeysOf } from "openapi-typescript-helpers";

import { errorFrom } from "./errors.js";
import { type RetryOptions, retrying } from "./retry.js";
import type { paths } from "./schema.js";

export type Media = "application/json";
export const API_PREFIX = "/api/v1";

export interface MemoryPlatformOptions extends RetryOptions {
  /** The server, e.g. `http://127.0.0.1:8000` (a trailing `/api/v1` is accepted too). */
  url: string;
  /** An agent's API key (`mp_...`), sent as `Authorization: Bearer`. */
  apiKey: string;
  /** Headers for every request, besides the API key's. */
  headers?: Record<string, string>;
  /** What sends a request (default: the global fetch); each retry goes through it too. */
  fetch?: (request: Request) => Promise<Response>;
}

// As openapi-fetch's own: the init argument is optional when nothing in it is required.
type InitParam<Init> = RequiredKeysOf<Init> extends never
  ? [(Init & { [key: string]: unknown })?]
  : [Init & { [key: string]: unknown }];

type Success<Operation, Init> = Operation extends Record<string | number, any>
  ? Extract<FetchResponse<Operation, Init, Media>, { data: unknown }>["data"]
  : never;

/** An operation's successful answer, as its JSON reads; undefined for a 204. */
export type Answer<Operation, Init = {}> =
  [Success<Operation, Init>] extends [never] ? undefined : Success<Operation, Init>;

/** A method of the API's paths: resolves to the answer's data, throws a PlatformError for an error answer. */
export type DataMethod<Method extends HttpMethod> =
  <Path extends PathsWithMethod<paths, Method>, Init extends MaybeOptionalInit<paths[Path], Method>>(
    path: Path, ...init: InitParam<Init>) => Promise<Answer<paths[Path][Method], Init>>;

/** The server's root: what was given, less trailing slashes and `/api/v1` (the schema's paths hold it). */
export function serverUrl(url: string): string {
  const trimmed = url.replace(/\/+$/, "");
  return trimmed.endsWith(API_PREFIX) ? trimmed.slice(0, -API_PREFIX.length) : trimmed;
}

function answeringData<Method extends HttpMethod>(call: (...args: any[]) => Promise<any>): DataMethod<Method> {
  return (async (path: string, ...init: unknown[]) => {
    const { data, error, response } = await call(path, ...init);
    if (!response.ok) throw errorFrom(response, error);
    return data;
  }) as DataMethod<Method>;
}

/**
 * The Memory Platform's REST API. `get`, `post`, `put`, `patch` and `delete` take a path of the
 * schema (`"/api/v1/memories/{memory_id}"`) with its `params` and `body`, and resolve to the
 * answer's data, typed by the schema, or throw a PlatformError. `api` is openapi-fetch's own
 * client (`GET`, `POST`... answering `{data, error, response}`, for headers such as ETag).
 */
export class MemoryPlatform {
  readonly api: Client<paths, Media>;
  readonly get: DataMethod<"get">;
  readonly post: DataMethod<"post">;
  readonly put: DataMethod<"put">;
  readonly patch: DataMethod<"patch">;
  readonly delete: DataMethod<"delete">;

  constructor(options: MemoryPlatformOptions) {
    const { url, apiKey, headers, fetch: send = (request) => globalThis.fetch(request), ...retry } = options;
    this.api = createClient<paths, Media>({
      baseUrl: serverUrl(url),
      headers: { ...headers, Authorization: `Bearer ${apiKey}` },
      fetch: retrying(send, retry),
    });
    this.get = answeringData(this.api.GET);
    this.post = answeringData(this.api.POST);
    this.put = answeringData(this.api.PUT);
    this.patch = answeringData(this.api.PATCH);
    this.delete = answeringData(this.api.DELETE);
  }
}
