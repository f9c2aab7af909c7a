/** Turns the server could not take yet, one file per session, so none is lost while reme is
 * down or the token is wrong: the next capture (of any session) sends them first. reme merges
 * turns by id, so sending a session's whole history again adds only what is new. */

import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Turn } from "./messages.js";

export interface Pending {
  session_id: string;
  messages: Turn[];
}

const SUFFIX = ".json";

export class Spool {
  constructor(readonly dir: string) {}

  private path(sessionId: string): string {
    return join(this.dir, `${sessionId}${SUFFIX}`);
  }

  /** Keep a session's turns; a later call for the same session holds all earlier turns too,
   * so the newest file replaces the older one. */
  async keep(pending: Pending): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const target = this.path(pending.session_id);
    const temp = `${target}.${process.pid}.tmp`;
    await writeFile(temp, JSON.stringify(pending), "utf8");
    await rename(temp, target); // atomic: a half-written file is never read back
  }

  async forget(sessionId: string): Promise<void> {
    await rm(this.path(sessionId), { force: true });
  }

  /** What waits, oldest call first; unreadable files are skipped (and left for a person). */
  async waiting(): Promise<Pending[]> {
    let names: string[];
    try {
      names = (await readdir(this.dir)).filter((n) => n.endsWith(SUFFIX));
    } catch {
      return [];
    }
    const found: Pending[] = [];
    for (const name of names.sort()) {
      try {
        const parsed = JSON.parse(await readFile(join(this.dir, name), "utf8")) as Pending;
        if (typeof parsed?.session_id === "string" && Array.isArray(parsed.messages)) {
          found.push(parsed);
        }
      } catch {
        continue;
      }
    }
    return found;
  }
}
