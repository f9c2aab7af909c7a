/** The reme plugin for OpenClaw: reme's search/read/write as tools, recall before each reply
 * (`before_prompt_build`) and capture after it (`agent_end`), over a running `reme serve`.
 *
 * Nothing here may break or block a turn: every call has a timeout, every fault is one log
 * line and an empty result, and turns the server could not take wait in a spool. */

import { homedir } from "node:os";
import { join } from "node:path";
import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";
import { capture } from "./capture.js";
import { resolveConfig } from "./config.js";
import { FaultLog } from "./faults.js";
import { remeSessionId } from "./messages.js";
import { queryOf, recall } from "./recall.js";
import { Spool } from "./spool.js";
import { runTool, TOOLS } from "./tools.js";

function stateDir(api: OpenClawPluginApi): string {
  try {
    return api.runtime.state.resolveStateDir();
  } catch {
    return join(homedir(), ".openclaw");
  }
}

function register(api: OpenClawPluginApi): void {
  const config = resolveConfig(api.pluginConfig);
  const faults = new FaultLog(api.logger);
  const spool = new Spool(config.spoolDir ?? join(stateDir(api), "reme-spool"));

  for (const spec of TOOLS) {
    api.registerTool({
      name: spec.name,
      label: spec.label,
      description: spec.description,
      parameters: spec.parameters,
      execute: async (_toolCallId: string, params: unknown) =>
        runTool(spec, config, faults, params),
    });
  }

  if (config.recall) {
    api.on("before_prompt_build", async (event) => {
      const query = queryOf(event);
      try {
        const context = await recall(config, query);
        return context ? { prependContext: context } : undefined;
      } catch (error) {
        faults.report(error, "no recall for this reply");
        return undefined;
      }
    });
  }

  if (config.capture) {
    api.on("agent_end", async (event, ctx) => {
      const sessionId = remeSessionId(ctx.sessionId, ctx.sessionKey);
      if (!sessionId) {
        api.logger.warn("reme: capture skipped: OpenClaw gave this turn no session id");
        return;
      }
      try {
        const done = await capture(config, spool, faults, sessionId, event.messages);
        if (done.sent.length && !done.kept.length) faults.clear();
      } catch (error) {
        // The spool itself failed (disk full, no permission): say so once, never throw.
        faults.report(error, `capture of ${sessionId} failed`);
      }
    });
  }
}

export default {
  id: "reme",
  name: "reme memory",
  description:
    "Search, read and write a reme workspace; recall before each reply and save each turn.",
  register,
};
