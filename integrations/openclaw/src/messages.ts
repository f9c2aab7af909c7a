import { createHash } from "node:crypto";

/** OpenClaw's session messages (user / assistant / toolResult, content as text or parts) as the
 * `{role, content, timestamp}` turns reme's auto_memory takes, without the recall block this
 * plugin put in the prompt (so recalled notes are not saved back as if the user said them). */

export const RECALL_OPEN = "<reme-recall>";
export const RECALL_CLOSE = "</reme-recall>";
const RECALL_BLOCK = /<reme-recall>[\s\S]*?<\/reme-recall>\s*/g;
const MAX_TURN_CHARS = 20_000;
/** A longer turn is cut here; reme redacts secrets and keeps the transcript, not whole logs. */

export interface Turn {
  role: "user" | "assistant" | "tool";
  content: string;
  timestamp?: string;
  id?: string;
}

type Part = { type?: unknown; text?: unknown; name?: unknown; arguments?: unknown };

function partsText(content: unknown, withToolCalls: boolean): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const out: string[] = [];
  for (const raw of content as Part[]) {
    if (!raw || typeof raw !== "object") continue;
    if (raw.type === "text" && typeof raw.text === "string") out.push(raw.text);
    else if (withToolCalls && raw.type === "toolCall" && typeof raw.name === "string") {
      out.push(`[tool call ${raw.name} ${JSON.stringify(raw.arguments ?? {})}]`);
    }
  }
  return out.join("\n");
}

function stamp(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isFinite(value) && value > 0) {
    return new Date(value).toISOString();
  }
  if (typeof value === "string" && !Number.isNaN(Date.parse(value))) {
    return new Date(value).toISOString();
  }
  return undefined;
}

export function stripRecall(text: string): string {
  return text.replace(RECALL_BLOCK, "").trim();
}

/** A turn's id: its role, its text and how many times the same text came before in the session.
 * Not its timestamp: OpenClaw stamps a user message once when it arrives and again when it is
 * stored, so the same message comes back with another time in the next session's history. */
function turnId(role: string, content: string, seen: Map<string, number>): string {
  const digest = createHash("sha256").update(`${role}\u0000${content}`).digest("hex");
  const count = seen.get(digest) ?? 0;
  seen.set(digest, count + 1);
  return `oc-${digest.slice(0, 24)}-${count}`;
}

/** The turns worth saving, in order; unknown shapes are skipped, never thrown on. */
export function toTurns(messages: unknown): Turn[] {
  if (!Array.isArray(messages)) return [];
  const turns: Turn[] = [];
  const seen = new Map<string, number>();
  for (const message of messages) {
    if (!message || typeof message !== "object") continue;
    const m = message as Record<string, unknown>;
    let role: Turn["role"];
    let content: string;
    if (m.role === "user") {
      role = "user";
      content = stripRecall(partsText(m.content, false));
    } else if (m.role === "assistant") {
      role = "assistant";
      content = partsText(m.content, true).trim();
    } else if (m.role === "toolResult" || m.role === "tool") {
      role = "tool";
      const name = typeof m.toolName === "string" ? `${m.toolName}: ` : "";
      content = (name + partsText(m.content, false)).trim();
    } else {
      continue;
    }
    if (!content) continue;
    if (content.length > MAX_TURN_CHARS) content = `${content.slice(0, MAX_TURN_CHARS)} [cut]`;
    const turn: Turn = { role, content, id: turnId(role, content, seen) };
    const when = stamp(m.timestamp);
    if (when) turn.timestamp = when;
    turns.push(turn);
  }
  return turns;
}

const SESSION_ID = /[^A-Za-z0-9_.-]+/g;

/** reme's session id for an OpenClaw session: `openclaw-<id>`, in the characters reme accepts
 * (they name sessions/<id>.jsonl). */
export function remeSessionId(sessionId: string | undefined, sessionKey?: string): string | undefined {
  const source = sessionId?.trim() || sessionKey?.trim();
  if (!source) return undefined;
  const safe = source.replace(SESSION_ID, "-").replace(/\.{2,}/g, ".").replace(/^[-_.]+/, "");
  return safe ? `openclaw-${safe}`.slice(0, 128) : undefined;
}
