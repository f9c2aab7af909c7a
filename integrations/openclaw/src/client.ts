/** reme's HTTP API (`POST /api/v1/<operation>`) with a bearer token; every failure becomes a
 * RemeFault that says in one line what went wrong and what to do. */

import type { RemeConfig } from "./config.js";

export type FaultKind = "unreachable" | "unauthorized" | "forbidden" | "rejected" | "server";

export class RemeFault extends Error {
  constructor(
    readonly kind: FaultKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = "RemeFault";
  }
}

function errorMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } };
    if (typeof parsed?.error?.message === "string") return parsed.error.message;
  } catch {
    // not JSON: the raw text says it
  }
  return body.slice(0, 200) || "no detail";
}

function causeOf(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
    if (error.name === "TimeoutError" || error.name === "AbortError") return "timed out";
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}

/** One call. Resolves to the operation's JSON output or throws a RemeFault. */
export async function callReme(
  config: RemeConfig,
  operation: string,
  input: Record<string, unknown>,
  timeoutMs: number = config.timeoutMs,
): Promise<unknown> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (config.token) headers.authorization = `Bearer ${config.token}`;
  if (config.workspace) headers["x-reme-workspace"] = config.workspace;
  const url = `${config.url}/api/v1/${operation}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify(input),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    throw new RemeFault("unreachable", `${config.url} unreachable (${causeOf(error)})`);
  }
  let body: string;
  try {
    // The timeout covers the body too: a server that sends its headers and then stalls.
    body = await response.text();
  } catch (error) {
    throw new RemeFault(
      "unreachable",
      `${config.url} sent no whole answer to ${operation} (${causeOf(error)})`,
    );
  }
  if (response.ok) {
    try {
      return body ? JSON.parse(body) : null;
    } catch {
      throw new RemeFault("server", `${operation}: the server sent invalid JSON`);
    }
  }
  const detail = errorMessage(body);
  const status = response.status;
  if (status === 401) {
    const hint = config.token ? "" : ` ($${config.tokenEnv} is not set)`;
    throw new RemeFault("unauthorized", `token refused (HTTP 401: ${detail})${hint}`, status);
  }
  if (status === 403) throw new RemeFault("forbidden", `${operation}: HTTP 403: ${detail}`, status);
  if (status >= 500) throw new RemeFault("server", `${operation}: HTTP ${status}: ${detail}`, status);
  throw new RemeFault("rejected", `${operation}: HTTP ${status}: ${detail}`, status);
}
