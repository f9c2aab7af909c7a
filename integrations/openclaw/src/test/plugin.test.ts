/** The plugin's own logic without OpenClaw: turns, recall text, faults and the spool against a
 * small reme stand-in on 127.0.0.1 (`npm test`; the real host is tests/integrations/). */

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";
import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { capture } from "../capture.js";
import { callReme, RemeFault } from "../client.js";
import { resolveConfig } from "../config.js";
import { FaultLog } from "../faults.js";
import { remeSessionId, toTurns } from "../messages.js";
import { formatHits, queryOf } from "../recall.js";
import { Spool } from "../spool.js";

interface Stub {
  url: string;
  calls: { path: string; auth: string | undefined; body: Record<string, unknown> }[];
  status: number;
  close(): Promise<void>;
}

async function body(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
}

async function stub(): Promise<Stub> {
  const state: Stub = { url: "", calls: [], status: 200, close: async () => {} };
  const server: Server = createServer(async (request, response) => {
    state.calls.push({
      path: request.url ?? "",
      auth: request.headers.authorization,
      body: await body(request),
    });
    const refused = { error: { type: "Forbidden", message: "this needs a 'write' token" } };
    response.writeHead(state.status, { "content-type": "application/json" });
    response.end(JSON.stringify(state.status === 200 ? { outputs: {} } : refused));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise((done) => server.close(() => done()));
  return state;
}

function logger(): { lines: string[]; info(m: string): void; warn(m: string): void } {
  const lines: string[] = [];
  return { lines, info: (m) => lines.push(m), warn: (m) => lines.push(m) };
}

const MESSAGES = [
  { role: "user", content: "<reme-recall>\n- [a.md] old\n</reme-recall>\n\nWhere is it?", timestamp: 1 },
  { role: "assistant", content: [{ type: "toolCall", name: "reme_search", arguments: { query: "it" } }] },
  { role: "toolResult", toolName: "reme_search", content: [{ type: "text", text: "{\"hits\":[]}" }] },
  { role: "assistant", content: [{ type: "text", text: "Behind the door." }], timestamp: 2 },
  { role: "custom", content: "skipped" },
];

test("turns: recall block taken out, tool calls and results kept, unknown roles skipped", () => {
  const turns = toTurns(MESSAGES);
  assert.deepEqual(
    turns.map((t) => [t.role, t.content]),
    [
      ["user", "Where is it?"],
      ["assistant", '[tool call reme_search {"query":"it"}]'],
      ["tool", 'reme_search: {"hits":[]}'],
      ["assistant", "Behind the door."],
    ],
  );
  assert.equal(turns[0]?.timestamp, new Date(1).toISOString());
  assert.deepEqual(toTurns("not a list"), []);
});

test("turn ids: stable across a session's restamped history, distinct for repeated words", () => {
  const live = toTurns([{ role: "user", content: "ok", timestamp: 5 }, { role: "user", content: "ok" }]);
  const stored = toTurns([{ role: "user", content: "ok", timestamp: 3 }, { role: "user", content: "ok" }]);
  assert.deepEqual(live.map((t) => t.id), stored.map((t) => t.id));
  assert.notEqual(live[0]?.id, live[1]?.id);
});

test("session ids: only the characters reme accepts, prefixed", () => {
  assert.equal(remeSessionId("abc-123"), "openclaw-abc-123");
  assert.equal(remeSessionId(undefined, "agent:main:explicit:s1"), "openclaw-agent-main-explicit-s1");
  assert.equal(remeSessionId("../../etc"), "openclaw-etc");
  assert.equal(remeSessionId(" "), undefined);
});

test("recall: the user's words are the query, hits become one marked block", () => {
  assert.equal(queryOf({ prompt: "x", currentUserMessage: "Where is the key?" }), "Where is the key?");
  const block = formatHits([{ path: "notes/k.md", start_line: 1, end_line: 3, text: "The key\nis here" }]);
  assert.match(block ?? "", /^<reme-recall>\n/);
  assert.match(block ?? "", /\[notes\/k\.md#L1-L3\] The key is here/);
  assert.equal(formatHits([]), undefined);
});

test("config: defaults, and the token read from the named variable", () => {
  const config = resolveConfig({ tokenEnv: "MY_TOKEN" }, { MY_TOKEN: " secret ", REME_URL: "http://h:1/" });
  assert.equal(config.url, "http://h:1");
  assert.equal(config.token, "secret");
  assert.equal(config.recallLimit, 3);
  assert.equal(resolveConfig(undefined, {}).url, "http://127.0.0.1:2333");
});

test("capture: server down -> one line and the turns spooled; back up -> sent, spool empty", async () => {
  const spool = new Spool(await mkdtemp(join(tmpdir(), "reme-spool-")));
  const log = logger();
  const faults = new FaultLog(log);
  const down = resolveConfig({ url: "http://127.0.0.1:9", timeoutMs: 500 }, { REME_TOKEN: "t" });
  const first = await capture(down, spool, faults, "openclaw-s1", MESSAGES.slice(0, 1));
  await capture(down, spool, faults, "openclaw-s2", MESSAGES.slice(0, 1));
  assert.deepEqual(first.kept, ["openclaw-s1"]);
  assert.equal(log.lines.length, 1, log.lines.join("\n"));
  assert.match(log.lines[0] ?? "", /^reme: http:\/\/127\.0\.0\.1:9 unreachable .*kept in/);

  const server = await stub();
  try {
    const up = resolveConfig({ url: server.url }, { REME_TOKEN: "t" });
    const done = await capture(up, spool, faults, "openclaw-s1", MESSAGES);
    assert.deepEqual(done.sent.sort(), ["openclaw-s1", "openclaw-s2"]);
    assert.deepEqual(await readdir(spool.dir), []);
    const s1 = server.calls.find((c) => c.body.session_id === "openclaw-s1");
    assert.equal(s1?.auth, "Bearer t");
    assert.equal(s1?.path, "/api/v1/auto_memory");
    // The spooled first turn and the new ones, each once.
    assert.equal((s1?.body.messages as unknown[]).length, 4);
  } finally {
    await server.close();
  }
});

test("capture: a read-only token -> one line naming the fix, turns kept for later", async () => {
  const server = await stub();
  server.status = 403;
  try {
    const spool = new Spool(await mkdtemp(join(tmpdir(), "reme-spool-")));
    const log = logger();
    const config = resolveConfig({ url: server.url }, { REME_TOKEN: "read-only" });
    const faults = new FaultLog(log);
    await capture(config, spool, faults, "openclaw-s1", MESSAGES);
    await capture(config, spool, faults, "openclaw-s1", MESSAGES);
    assert.equal(log.lines.length, 1, log.lines.join("\n"));
    assert.match(log.lines[0] ?? "", /HTTP 403.*capture needs a write token/);
    assert.equal((await spool.waiting())[0]?.messages.length, 4);
  } finally {
    await server.close();
  }
});

interface Silent {
  url: string;
  requests(): number;
  close(): Promise<void>;
}

/** A socket on 127.0.0.1 that accepts every connection and never answers it; with `head`, it
 * sends a response's headers and the first byte of its body, then nothing more. `requests`
 * counts the requests it was sent (fetch may open a spare connection it sends nothing on). */
async function silent(head: boolean): Promise<Silent> {
  const held: Socket[] = [];
  let requests = 0;
  const server = createTcpServer((socket) => {
    held.push(socket);
    socket.on("error", () => {});
    socket.once("data", () => {
      requests += 1;
      if (head) {
        const headers = "content-type: application/json\r\ncontent-length: 99\r\n";
        socket.write(`HTTP/1.1 200 OK\r\n${headers}\r\n{`);
      }
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    close: () => {
      for (const socket of held) socket.destroy();
      return new Promise((done) => server.close(() => done()));
    },
  };
}

for (const head of [false, true]) {
  const what = head ? "stalls after its headers" : "never answers";
  const name = `a server that ${what}: each call gives up after timeoutMs as one fault`;
  test(name, { timeout: 30_000 }, async () => {
    const server = await silent(head);
    try {
      const config = resolveConfig({ url: server.url, timeoutMs: 300 }, { REME_TOKEN: "t" });
      await assert.rejects(
        callReme(config, "search", { query: "kiln" }),
        (error) =>
          error instanceof RemeFault && error.kind === "unreachable" && /timed out/.test(error.message),
      );
      // Capture: the first session times out and is kept; the next capture tries once (the
      // server is down: one timeout, not one per waiting session) and keeps both.
      const spool = new Spool(await mkdtemp(join(tmpdir(), "reme-spool-")));
      const log = logger();
      const faults = new FaultLog(log);
      const first = await capture(config, spool, faults, "openclaw-s1", MESSAGES);
      assert.deepEqual(first.kept, ["openclaw-s1"]);
      const before = server.requests();
      const second = await capture(config, spool, faults, "openclaw-s2", MESSAGES);
      assert.deepEqual(second.kept.sort(), ["openclaw-s1", "openclaw-s2"]);
      assert.equal(server.requests() - before, 1);
      assert.equal(log.lines.length, 1, log.lines.join("\n"));
      assert.match(log.lines[0] ?? "", /timed out.*kept in/);
    } finally {
      await server.close();
    }
  });
}
