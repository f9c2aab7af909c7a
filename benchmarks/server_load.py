"""Server load: concurrent searchers and writers against ``reme serve`` on loopback.

Run with ``python benchmarks/server_load.py`` (``--notes 200 --searchers 4 --writers 2
--seconds 10``; ``--vectors`` for the default hybrid search instead of keyword only;
``--embed-ms 100`` for hybrid search whose embedding is a remote API answering in 100 ms). Not in
CI.

``--embed-ms`` starts an OpenAI-compatible ``/v1/embeddings`` endpoint on loopback in this process
that waits that long, then answers with feature-hash vectors (the ``hash`` fake's), and points
the ``openai`` embedding at it, with the exact ``local`` vector store. Each write then spends
that long embedding and each search that long embedding its query, with no model on the local
CPU: the figures show what writers make searchers wait for, not what they compete with them for.

A synthetic workspace (``synthetic.py``) is searched with its planted questions in three phases
of ``--seconds`` each, so every figure has a baseline from the same run on the same machine:

1. in-process: ``Reme.search`` from S threads (no HTTP), the baseline;
2. HTTP, search only: the same S searchers, each with its own client, against the server;
3. HTTP, search + writes: the same, plus W writers creating new notes through ``write``.

Then every acknowledged write is checked: its file holds exactly what was sent, and a search for
the unique word it contains finds it (the write operation indexes before it answers). A write the
server acknowledged but that is missing or not found is lost; the expected count is 0, and the
exit status is 1 otherwise. Clients run as threads of this process, so on a small machine they
compete with the server for the CPU: compare the phases' ratios more than the absolute figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synthetic import generate_workspace  # noqa: E402

from reme_core.client import RemeClient  # noqa: E402

KEYWORD_ONLY = {"REME_COMPONENTS__EMBEDDING": "null", "REME_COMPONENTS__FILE_STORE": "null"}
START_TIMEOUT_S = 300  # a first start indexes the whole workspace (and embeds, with --vectors)
WRITE_FOLDER = "load"


@dataclass
class Phase:
    name: str
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    search_errors: int = 0
    writes: int = 0
    write_errors: int = 0

    @property
    def searches_per_s(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile_ms(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000

    def row(self) -> dict[str, Any]:
        return {
            "phase": self.name,
            "seconds": round(self.seconds, 2),
            "searches": len(self.latencies),
            "searches_per_s": round(self.searches_per_s, 1),
            "p50_ms": round(self.percentile_ms(0.5), 2),
            "p95_ms": round(self.percentile_ms(0.95), 2),
            "search_errors": self.search_errors,
            "writes": self.writes,
            "writes_per_s": round(self.writes / self.seconds, 1) if self.seconds else 0.0,
            "write_errors": self.write_errors,
        }


@dataclass(frozen=True)
class Written:
    path: str
    content: str
    word: str


def unique_word(writer: int, n: int) -> str:
    """A word no generated note contains (letters only, so no tokenizer splits it)."""
    value, letters = writer * 1_000_000 + n, ""
    while True:
        value, digit = divmod(value, 26)
        letters = chr(ord("a") + digit) + letters
        if not value:
            return f"zqx{letters}"


def run_threads(
    phase: Phase,
    seconds: float,
    searchers: Sequence[Callable[[str], Any]],
    queries: list[str],
    writers: Sequence[Callable[[int, int], Written | None]] = (),
    acked: list[Written] | None = None,
) -> Phase:
    """Run every searcher and writer in its own thread for ``seconds``; fill ``phase``."""
    lock = threading.Lock()
    start = threading.Barrier(len(searchers) + len(writers) + 1)
    stop = threading.Event()

    def search_loop(index: int, search: Callable[[str], Any]) -> None:
        mine, errors, i = [], 0, index
        start.wait()
        while not stop.is_set():
            query = queries[i % len(queries)]
            i += len(searchers)
            t0 = time.perf_counter()
            try:
                search(query)
            except Exception:
                errors += 1
                continue
            mine.append(time.perf_counter() - t0)
        with lock:
            phase.latencies.extend(mine)
            phase.search_errors += errors

    def write_loop(index: int, write: Callable[[int, int], Written | None]) -> None:
        done, errors, n = [], 0, 0
        start.wait()
        while not stop.is_set():
            n += 1
            try:
                written = write(index, n)
            except Exception:
                errors += 1
                continue
            if written is not None:
                done.append(written)  # only what the server acknowledged
        with lock:
            phase.writes += len(done)
            phase.write_errors += errors
            if acked is not None:
                acked.extend(done)

    threads = [
        threading.Thread(target=search_loop, args=(i, s)) for i, s in enumerate(searchers)
    ] + [threading.Thread(target=write_loop, args=(i, w)) for i, w in enumerate(writers)]
    for thread in threads:
        thread.start()
    start.wait()
    began = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    phase.seconds = time.perf_counter() - began  # includes the calls in flight at the stop
    return phase


# -- the server ----------------------------------------------------------------------------------


class SlowEmbeddings:
    """An OpenAI-compatible embeddings endpoint on loopback answering after ``delay_s``."""

    def __init__(self, delay_s: float):
        from reme_plugins.embedding_hash import HashEmbedding

        fake = HashEmbedding()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                time.sleep(delay_s)  # the network and the remote model
                rows = fake.embed_passages(inputs)
                data = [{"index": i, "embedding": row.tolist()} for i, row in enumerate(rows)]
                reply = json.dumps({"data": data, "model": body.get("model")}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def server_env(args: argparse.Namespace, endpoint: SlowEmbeddings | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REME_")}
    if endpoint is not None:
        env.update(
            {
                "REME_COMPONENTS__EMBEDDING__NAME": "openai",
                "REME_COMPONENTS__EMBEDDING__SETTINGS__MODEL": "slow-hash",
                "REME_COMPONENTS__EMBEDDING__SETTINGS__BASE_URL": endpoint.url,
                "REME_COMPONENTS__FILE_STORE__NAME": "local",
            }
        )
    elif not args.vectors:
        env.update(KEYWORD_ONLY)
    return env


def reme_command() -> list[str]:
    script = Path(sys.executable).with_name("reme")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from reme_core.cli import main; main()"]


def start_server(root: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen, str, str]:
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [*reme_command(), "serve", "-w", str(root), "--port", "0", "--log-level", "warning"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    discovery = root / ".reme" / "server.json"
    deadline = time.monotonic() + START_TIMEOUT_S
    while not discovery.is_file():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop_server(proc)
            raise SystemExit(f"reme serve did not start:\n{log.read_text(errors='replace')}")
        time.sleep(0.1)
    url = json.loads(discovery.read_text(encoding="utf-8"))["url"]
    token = (root / ".reme" / "token").read_text(encoding="utf-8").strip()
    return proc, url, token


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()  # graceful: the server persists its indexes
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# -- the phases ----------------------------------------------------------------------------------


def in_process_phase(
    root: Path, args: argparse.Namespace, queries: list[str], env: dict[str, str]
) -> Phase:
    from reme_core.runtime import Reme

    reme = Reme.open(root, env=env)
    try:
        reme.index()
        reme.search(queries[0], limit=args.limit)  # warm-up: loads the query model, if any
        searchers = [lambda q: reme.search(q, limit=args.limit)] * args.searchers
        return run_threads(Phase("in-process (baseline)"), args.seconds, searchers, queries)
    finally:
        reme.close()


def http_phases(
    root: Path, args: argparse.Namespace, queries: list[str], work: Path, env: dict[str, str]
) -> tuple[list[Phase], list[Written], dict[str, int]]:
    proc, url, token = start_server(root, env, work / "server.log")
    clients: list[RemeClient] = []

    def client() -> RemeClient:
        made = RemeClient(url, token, timeout=60)
        clients.append(made)
        return made

    try:
        wait_until_idle(client())
        searchers = []
        for _ in range(args.searchers):
            c = client()
            searchers.append(lambda q, c=c: c.call("search", {"query": q, "limit": args.limit}))
            searchers[-1](queries[0])  # warm-up: connect, load the query model
        search_only = run_threads(Phase("HTTP, search only"), args.seconds, searchers, queries)

        def writer(c: RemeClient) -> Callable[[int, int], Written]:
            def write(index: int, n: int) -> Written:
                word = unique_word(index, n)
                path = f"{WRITE_FOLDER}/w{index}-{n:05d}.md"
                content = (
                    f"# Load note {index}-{n}\n\nWriter {index} wrote note {n}; its marker word "
                    f"is {word}, found in no other note.\n"
                )
                c.call("write", {"path": path, "content": content})
                return Written(path, content, word)

            return write

        writers = [writer(client()) for _ in range(args.writers)]
        acked: list[Written] = []
        mixed = run_threads(
            Phase(f"HTTP, search + {args.writers} writers"),
            args.seconds,
            searchers,
            queries,
            writers,
            acked,
        )
        lost = verify(root, client(), acked)
        return [search_only, mixed], acked, lost
    finally:
        for c in clients:
            c.close()
        stop_server(proc)


def wait_until_idle(client: RemeClient) -> None:
    """Measure nothing while the server is still embedding at start (with --vectors)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        vectors = client.call("status", {}).get("vectors") or {}
        if vectors.get("state") != "building":
            return
        time.sleep(0.5)


def verify(root: Path, client: RemeClient, acked: list[Written]) -> dict[str, int]:
    """Every acknowledged write is on disk as sent, and found by a search for its word."""
    missing = not_found = lost = 0
    for item in acked:
        try:
            on_disk = (root / item.path).read_text(encoding="utf-8")
        except OSError:
            on_disk = None
        hits = client.call("search", {"query": item.word, "limit": 5, "paths": [WRITE_FOLDER]})
        absent = on_disk != item.content
        unfound = item.path not in [hit["path"] for hit in hits["hits"]]
        missing, not_found, lost = missing + absent, not_found + unfound, lost + (absent or unfound)
    return {
        "acknowledged": len(acked),
        "not_on_disk": missing,
        "not_searchable": not_found,
        "lost": lost,
    }


# -- report --------------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def report(phases: list[Phase], lost: dict[str, int], args: argparse.Namespace) -> None:
    search = "hybrid" if args.vectors else "keyword"
    if args.embed_ms is not None:
        search = f"hybrid, remote embedding {args.embed_ms:g} ms"
    print(
        f"notes={args.notes} searchers={args.searchers} writers={args.writers} "
        f"seconds={args.seconds:g} limit={args.limit} search={search} cpus={os.cpu_count()}"
    )
    print(
        f"{'phase':<28} {'searches/s':>10} {'p50 ms':>8} {'p95 ms':>8} {'writes/s':>9} "
        f"{'errors':>7}"
    )
    for p in phases:
        r = p.row()
        print(
            f"{p.name:<28} {r['searches_per_s']:>10.1f} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} "
            f"{r['writes_per_s']:>9.1f} {p.search_errors + p.write_errors:>7}"
        )
    base, http, mixed = phases
    print(
        f"HTTP / in-process: searches/s {ratio(http.searches_per_s, base.searches_per_s)}, "
        f"p50 {ratio(http.percentile_ms(0.5), base.percentile_ms(0.5))}, "
        f"p95 {ratio(http.percentile_ms(0.95), base.percentile_ms(0.95))}"
    )
    print(
        f"with writers / search only: searches/s "
        f"{ratio(mixed.searches_per_s, http.searches_per_s)}, "
        f"p50 {ratio(mixed.percentile_ms(0.5), http.percentile_ms(0.5))}, "
        f"p95 {ratio(mixed.percentile_ms(0.95), http.percentile_ms(0.95))}"
    )
    print(
        f"writes acknowledged {lost['acknowledged']}: not on disk {lost['not_on_disk']}, "
        f"not searchable {lost['not_searchable']} -> lost {lost['lost']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=200)
    parser.add_argument("--searchers", type=int, default=4)
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0, help="per phase")
    parser.add_argument("--limit", type=int, default=10, help="hits per search")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vectors", action="store_true", help="hybrid search (default config)")
    parser.add_argument(
        "--embed-ms",
        type=float,
        default=None,
        help="hybrid search with a remote-style embedding answering in this many ms",
    )
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args(argv)
    if args.searchers < 1 or args.writers < 0:
        parser.error("needs at least one searcher")
    if args.embed_ms is not None and args.embed_ms < 0:
        parser.error("--embed-ms must be 0 or more")

    work = Path(tempfile.mkdtemp(prefix="reme-load-"))
    endpoint = SlowEmbeddings(args.embed_ms / 1000) if args.embed_ms is not None else None
    try:
        root = work / "ws"
        facts = generate_workspace(root, args.notes, seed=args.seed)
        queries = [f.query for f in facts]
        env = server_env(args, endpoint)
        baseline = in_process_phase(root, args, queries, env)
        phases, _, lost = http_phases(root, args, queries, work, env)
        phases = [baseline, *phases]
        report(phases, lost, args)
        if args.json:
            print(json.dumps({"phases": [p.row() for p in phases], "writes": lost}))
        return 1 if lost["lost"] else 0
    finally:
        if endpoint is not None:
            endpoint.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
