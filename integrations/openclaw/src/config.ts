/** The plugin's settings, from `plugins.entries.reme.config` (checked by OpenClaw against
 * openclaw.plugin.json's configSchema first) and the environment. */

export const DEFAULT_URL = "http://127.0.0.1:2333";
export const DEFAULT_TOKEN_ENV = "REME_TOKEN";

export interface RemeConfig {
  url: string;
  tokenEnv: string;
  token: string | undefined;
  workspace: string | undefined;
  recall: boolean;
  recallLimit: number;
  capture: boolean;
  timeoutMs: number;
  captureTimeoutMs: number;
  spoolDir: string | undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() ? value.trim() : undefined;
}

function flag(value: unknown, fallback: boolean): boolean {
  return typeof value === "boolean" ? value : fallback;
}

function integer(value: unknown, fallback: number, low: number, high: number): number {
  if (typeof value !== "number" || !Number.isInteger(value)) return fallback;
  return Math.min(high, Math.max(low, value));
}

/** Resolve the settings; the token is read from the environment at each call site's start, so
 * the secret never sits in OpenClaw's config file. */
export function resolveConfig(
  raw: Record<string, unknown> | undefined,
  env: NodeJS.ProcessEnv = process.env,
): RemeConfig {
  const given = raw ?? {};
  const tokenEnv = text(given.tokenEnv) ?? DEFAULT_TOKEN_ENV;
  const timeout = integer(given.timeoutMs, 0, 0, 120_000);
  return {
    url: (text(given.url) ?? text(env.REME_URL) ?? DEFAULT_URL).replace(/\/+$/, ""),
    tokenEnv,
    token: text(env[tokenEnv]),
    workspace: text(given.workspace),
    recall: flag(given.recall, true),
    recallLimit: integer(given.recallLimit, 3, 1, 20),
    capture: flag(given.capture, true),
    timeoutMs: timeout || 5_000,
    // Capture runs after the reply is out; it can afford longer (the server may summarise).
    captureTimeoutMs: timeout || 20_000,
    spoolDir: text(given.spoolDir),
  };
}
