/** One clear line in OpenClaw's log per fault, not one per call: a server that is down fails the
 * recall, the tools and the capture of the same turn, and the user needs to read it once. */

import { RemeFault } from "./client.js";

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
}

const WHAT_TO_DO: Record<string, string> = {
  unreachable: "is `reme serve` running at that address?",
  unauthorized: "set the token's variable to a token from `reme token create --profile write`",
  forbidden: "the token's profile is too narrow: capture needs a write token",
  rejected: "the request was refused",
  server: "see the server's log",
};

export class FaultLog {
  private seen = new Set<string>();

  constructor(private readonly logger: Logger) {}

  /** Log ``error`` (with what is affected) unless the same fault was logged already. */
  report(error: unknown, affected: string): void {
    const fault =
      error instanceof RemeFault ? error : new RemeFault("server", String(error ?? "unknown error"));
    const key = `${fault.kind}:${fault.kind === "forbidden" || fault.kind === "rejected" ? affected : ""}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.logger.warn(`reme: ${fault.message}; ${affected} (${WHAT_TO_DO[fault.kind]})`);
  }

  /** After a success, a later fault of the same kind is news again. */
  clear(): void {
    this.seen.clear();
  }
}
