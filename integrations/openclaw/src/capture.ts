/** Capture after a reply: the session's turns go to reme's auto_memory, which appends the new
 * ones to sessions/<id>.jsonl and writes the daily/ note linking back to it. A call that fails
 * leaves the turns in the spool for the next capture. */

import { callReme, RemeFault } from "./client.js";
import type { RemeConfig } from "./config.js";
import type { FaultLog } from "./faults.js";
import { type Turn, toTurns } from "./messages.js";
import type { Pending, Spool } from "./spool.js";

export interface CaptureResult {
  sent: string[];
  kept: string[];
}

function key(turn: Turn): string {
  return turn.id ?? `${turn.role}\u0000${turn.timestamp ?? ""}\u0000${turn.content}`;
}

/** ``earlier`` then ``later``, each turn once (reme merges by id as well; this keeps the
 * request small). */
export function mergeTurns(earlier: Turn[], later: Turn[]): Turn[] {
  const seen = new Set<string>();
  const out: Turn[] = [];
  for (const turn of [...earlier, ...later]) {
    const k = key(turn);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(turn);
  }
  return out;
}

export async function capture(
  config: RemeConfig,
  spool: Spool,
  faults: FaultLog,
  sessionId: string,
  messages: unknown,
): Promise<CaptureResult> {
  const waiting = await spool.waiting();
  const own = waiting.find((p) => p.session_id === sessionId);
  const calls: Pending[] = waiting.filter((p) => p.session_id !== sessionId);
  const turns = mergeTurns(own?.messages ?? [], toTurns(messages));
  if (turns.length) calls.push({ session_id: sessionId, messages: turns });
  const result: CaptureResult = { sent: [], kept: [] };
  let down: unknown;
  for (const call of calls) {
    if (down === undefined) {
      try {
        await callReme(config, "auto_memory", { ...call }, config.captureTimeoutMs);
        await spool.forget(call.session_id);
        result.sent.push(call.session_id);
        continue;
      } catch (error) {
        // A server that is down or a token it refuses fails every call alike: keep the rest.
        if (error instanceof RemeFault && error.kind !== "rejected") down = error;
        faults.report(
          error,
          `capture of ${call.session_id} postponed: its turns are kept in ${spool.dir} ` +
            "and sent with the next capture",
        );
      }
    }
    await spool.keep(call);
    result.kept.push(call.session_id);
  }
  return result;
}
