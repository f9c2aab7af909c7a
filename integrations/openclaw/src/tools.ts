/** reme's search, read and write as OpenClaw agent tools. A fault is the tool's answer (the
 * model can go on without memory), never an exception that ends the turn. */

import { callReme } from "./client.js";
import type { RemeConfig } from "./config.js";
import type { FaultLog } from "./faults.js";

export interface ToolSpec {
  name: string;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  operation: string;
  input(params: Record<string, unknown>): Record<string, unknown>;
}

export const TOOLS: ToolSpec[] = [
  {
    name: "reme_search",
    label: "reme search",
    description:
      "Search the user's reme memory (notes, daily session notes, resources) before answering " +
      "anything about their projects, decisions, people or past sessions. Returns hits with " +
      "path, line range and text; cite the path.",
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: "What to look for, in plain words." },
        limit: { type: "integer", minimum: 1, maximum: 50, description: "Hits (default 10)." },
      },
      required: ["query"],
      additionalProperties: false,
    },
    operation: "search",
    input: (p) => ({ query: p.query, ...(p.limit === undefined ? {} : { limit: p.limit }) }),
  },
  {
    name: "reme_read",
    label: "reme read",
    description: "Read a note of the reme workspace (a path from reme_search), or a line range.",
    parameters: {
      type: "object",
      properties: {
        path: { type: "string", description: "Workspace-relative path, e.g. notes/kiln.md." },
        start_line: { type: "integer", minimum: 1 },
        end_line: { type: "integer", minimum: 1 },
      },
      required: ["path"],
      additionalProperties: false,
    },
    operation: "read",
    input: (p) => ({ ...p }),
  },
  {
    name: "reme_write",
    label: "reme write",
    description:
      "Write a Markdown note into the reme workspace (creates or replaces it). Pass " +
      "expected_hash from reme_read to replace a note only if it has not changed since.",
    parameters: {
      type: "object",
      properties: {
        path: { type: "string", description: "Workspace-relative path, e.g. notes/topic.md." },
        content: { type: "string", description: "The whole note, Markdown." },
        expected_hash: { type: "string" },
        create_only: { type: "boolean", description: "Refuse when the note exists." },
      },
      required: ["path", "content"],
      additionalProperties: false,
    },
    operation: "write",
    input: (p) => ({ ...p }),
  },
];

export interface ToolResult {
  content: { type: "text"; text: string }[];
  details: unknown;
}

export async function runTool(
  spec: ToolSpec,
  config: RemeConfig,
  faults: FaultLog,
  params: unknown,
): Promise<ToolResult> {
  const given = params && typeof params === "object" ? (params as Record<string, unknown>) : {};
  try {
    const output = await callReme(config, spec.operation, spec.input(given));
    return { content: [{ type: "text", text: JSON.stringify(output) }], details: output };
  } catch (error) {
    faults.report(error, `${spec.name} failed`);
    const message = error instanceof Error ? error.message : String(error);
    return {
      content: [{ type: "text", text: `reme ${spec.operation} failed: ${message}` }],
      details: { error: message },
    };
  }
}
