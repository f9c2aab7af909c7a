/** Recall before a reply: search the workspace with the user's message and hand the hits to the
 * prompt, marked so capture can take them out again. */

import { callReme } from "./client.js";
import type { RemeConfig } from "./config.js";
import { RECALL_CLOSE, RECALL_OPEN, stripRecall } from "./messages.js";

const MAX_QUERY_CHARS = 1_000;
const MAX_HIT_CHARS = 800;

interface Hit {
  path?: unknown;
  start_line?: unknown;
  end_line?: unknown;
  text?: unknown;
}

/** The search query for a turn: the user's own words, not the whole prepared prompt. */
export function queryOf(event: { prompt?: unknown; currentUserMessage?: unknown }): string {
  const given =
    typeof event.currentUserMessage === "string" && event.currentUserMessage.trim()
      ? event.currentUserMessage
      : typeof event.prompt === "string"
        ? event.prompt
        : "";
  return stripRecall(given).slice(-MAX_QUERY_CHARS).trim();
}

export function formatHits(hits: Hit[]): string | undefined {
  const lines: string[] = [];
  for (const hit of hits) {
    if (typeof hit?.path !== "string" || typeof hit.text !== "string") continue;
    const where =
      typeof hit.start_line === "number" && typeof hit.end_line === "number"
        ? `${hit.path}#L${hit.start_line}-L${hit.end_line}`
        : hit.path;
    const text = hit.text.replace(/\s+/g, " ").trim().slice(0, MAX_HIT_CHARS);
    lines.push(`- [${where}] ${text}`);
  }
  if (!lines.length) return undefined;
  return [
    RECALL_OPEN,
    "From your reme memory (search it with reme_search, open a note with reme_read; cite the path):",
    ...lines,
    RECALL_CLOSE,
  ].join("\n");
}

/** The block to prepend to this turn's prompt, or undefined when nothing matched. Throws a
 * RemeFault when the server cannot answer. */
export async function recall(config: RemeConfig, query: string): Promise<string | undefined> {
  if (!query) return undefined;
  const result = (await callReme(config, "search", { query, limit: config.recallLimit })) as {
    hits?: Hit[];
  } | null;
  return formatHits(Array.isArray(result?.hits) ? result.hits : []);
}
