"""The chromadb vector store: embedded (files under ``.reme/chroma``) or against a Chroma server.

``mode: embedded`` keeps a ``chromadb.PersistentClient`` in ``<state_dir>/chroma``, guarded by an
exclusive lock file so a second writer gets ``StoreBusyError``. ``mode: server`` talks to a
``chroma run`` server over HTTP(S); the server owns concurrency, so no lock is taken.

One collection per workspace and vector space, named ``<prefix>-<workspace hash>-<model hash>``;
opening another model drops this workspace's collections of other models (the caller re-embeds).
The collection is cosine space and carries no embedding function: reme supplies every vector, so
chromadb's default model is never constructed, downloaded or called.

Filters: what chroma can check goes into its ``where`` (``reme_plugins.chromadb_where``, which also
lays out each record's metadata); glob paths are matched after the query, over-fetching until
``limit`` hits pass or the candidates run out. Path matches are always re-checked exactly.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import field_validator

from reme_core.api import (
    ComponentContext,
    ComponentSettings,
    ConfigError,
    EmbeddingError,
    FileStore,
    PluginError,
    RemeError,
    SearchFilters,
    StoreBusyError,
    VectorRecord,
    hookimpl,
    path_matches,
)
from reme_plugins.chromadb_where import record_metadata, where_clause

try:  # the lock file needs flock; where it is missing (Windows) the embedded store is unguarded
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms reme tests on
    fcntl = None  # type: ignore[assignment]

INSTALL_HINT = "pip install 'reme[chromadb]'"
_PREFIX_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
_OVERFETCH = 4
"""Candidates asked for per wanted hit when some filter is checked after the query."""
_DELETE_BATCH = 500
_PAGE = 5000


class ChromaStoreError(RemeError):
    """The Chroma store (embedded files or server) failed or cannot be reached."""


def _import_chromadb() -> Any:
    """Import chromadb with telemetry off, or explain how to install it."""
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    try:
        import chromadb
        import chromadb.config
    except ImportError as exc:
        raise PluginError(
            f"the chromadb file store needs the chromadb package ({exc}): {INSTALL_HINT}"
        ) from exc
    return chromadb


def _short_hash(text: str, length: int = 10) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def _check_direction(vector: np.ndarray, what: str) -> None:
    """Cosine needs a finite, non-zero vector (chroma would answer NaN distances otherwise)."""
    if not np.isfinite(vector).all():
        raise EmbeddingError(f"{what} contains NaN or infinity")
    if not vector.any():
        raise EmbeddingError(f"{what} is all zeros and has no direction to compare")


class ChromaFileStore(FileStore):
    """Chunk vectors in one chromadb collection per workspace (embedded or on a Chroma server)."""

    name: ClassVar[str] = "chromadb"

    class Settings(ComponentSettings):
        mode: Literal["embedded", "server"] = "embedded"
        """``embedded``: files in ``<workspace>/.reme/chroma``; ``server``: a Chroma server."""
        host: str = "127.0.0.1"
        port: int = 8000
        ssl: bool = False
        token_env: str | None = None
        """Environment variable holding the server's token, sent as ``Authorization: Bearer``."""
        collection_prefix: str = "reme"
        """Start of the collection name; the rest is a hash of the workspace path and model."""
        ef_search: int = 400
        """HNSW candidate list per query (chroma's default is 100): higher is closer to exact."""

        @field_validator("collection_prefix")
        @classmethod
        def _check_prefix(cls, value: str) -> str:
            if not _PREFIX_RE.fullmatch(value) or ".." in value:
                raise ValueError(
                    "must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or "
                    f"digit (a Chroma collection name rule), got {value!r}"
                )
            return value

        @field_validator("port")
        @classmethod
        def _check_port(cls, value: int) -> int:
            if not 0 < value < 65536:
                raise ValueError(f"must be a TCP port (1-65535), got {value}")
            return value

        @field_validator("ef_search")
        @classmethod
        def _check_ef_search(cls, value: int) -> int:
            if value < 1:
                raise ValueError(f"must be at least 1, got {value}")
            return value

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        if context is None:
            raise PluginError(
                "the chromadb file store needs a workspace context (workspace and state_dir)"
            )
        self._lock = threading.RLock()
        self._client: Any = None
        self._collection: Any = None
        self._lock_file: Any = None
        self._model_id: str | None = None
        self._dim: int | None = None

    def state_files(self) -> list[Path] | None:
        """The embedded client's folder; a server's state is out of sight (None). chromadb
        writes its database whenever a client opens, so only the later passes of a process
        skip the id comparison."""
        return None if self.settings.mode == "server" else [self._chroma_dir]

    # -- naming and connection ---------------------------------------------------------------

    @property
    def location(self) -> str:
        """Where the vectors live, for messages: ``host:port`` or the embedded folder."""
        if self.settings.mode == "server":
            return f"{self.settings.host}:{self.settings.port}"
        return str(self._chroma_dir)

    @property
    def _chroma_dir(self) -> Path:
        return self.context.state_dir / "chroma"

    @property
    def _workspace_prefix(self) -> str:
        workspace = str(Path(self.context.workspace).resolve())
        return f"{self.settings.collection_prefix}-{_short_hash(workspace)}-"

    def collection_name(self, model_id: str) -> str:
        """Stable per workspace and model: ``<prefix>-<10 hex of workspace>-<10 hex of model>``."""
        return self._workspace_prefix + _short_hash(model_id)

    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """Turn chromadb / transport errors into a RemeError naming the store's location."""
        try:
            yield
        except RemeError:
            raise
        except Exception as exc:
            if self.settings.mode == "server":
                where = f"Chroma server at {self.location}"
                hint = " (is it running and reachable?)"
            else:
                where = f"embedded Chroma store in {self.location}"
                hint = ""
            raise ChromaStoreError(
                f"{action} failed on the {where}{hint}: {type(exc).__name__}: {exc}"
            ) from exc

    def _headers(self) -> dict[str, str]:
        name = self.settings.token_env
        if not name:
            return {}
        token = os.environ.get(name)
        if not token:
            raise ConfigError(
                f"file_store.settings.token_env: environment variable {name} is not set "
                f"(it should hold the token of the Chroma server at {self.location})"
            )
        return {"Authorization": f"Bearer {token}"}

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        chromadb = _import_chromadb()
        chroma_settings = chromadb.config.Settings(anonymized_telemetry=False)
        if self.settings.mode == "server":
            headers = self._headers()
            with self._errors("connecting"):
                self._client = chromadb.HttpClient(
                    host=self.settings.host,
                    port=self.settings.port,
                    ssl=self.settings.ssl,
                    headers=headers,
                    settings=chroma_settings,
                )
        else:
            self._take_lock()
            try:
                self._chroma_dir.mkdir(parents=True, exist_ok=True)
                with self._errors("opening"):
                    self._client = chromadb.PersistentClient(
                        path=str(self._chroma_dir), settings=chroma_settings
                    )
            except BaseException:
                self._release_lock()
                raise
        return self._client

    def _take_lock(self) -> None:
        if fcntl is None or self._lock_file is not None:
            return
        self.context.state_dir.mkdir(parents=True, exist_ok=True)
        handle = open(self.context.state_dir / "chroma.lock", "a+b")  # noqa: SIM115 - held open
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            handle.close()
            raise StoreBusyError(
                f"the embedded Chroma store in {self._chroma_dir} is in use by another writer "
                "(another reme process has this workspace open)"
            ) from exc
        self._lock_file = handle

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_file.fileno(), fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None

    # -- the FileStore contract --------------------------------------------------------------

    def open(self, model_id: str, dim: int) -> None:
        """Create or open this workspace's collection for ``model_id``; drop any other model's."""
        if dim <= 0:
            raise EmbeddingError(f"vector dimension must be positive, got {dim}")
        with self._lock:
            client = self._connect()
            name = self.collection_name(model_id)
            with self._errors("opening the collection"):
                for other in self._workspace_collections(client):
                    if other != name:
                        client.delete_collection(other)
                collection = self._create(client, name, model_id, dim)
                meta = collection.metadata or {}
                if meta.get("reme_model_id") != model_id or meta.get("reme_dim") != dim:
                    client.delete_collection(name)
                    collection = self._create(client, name, model_id, dim)
                with warnings.catch_warnings():  # chroma stores "no embedding function" as legacy
                    warnings.filterwarnings("ignore", "legacy embedding function config")
                    hnsw = (collection.configuration or {}).get("hnsw") or {}
                    if hnsw.get("ef_search") != self.settings.ef_search:
                        collection.modify(
                            configuration={"hnsw": {"ef_search": self.settings.ef_search}}
                        )
            self._collection = collection
            self._model_id = model_id
            self._dim = dim

    def _workspace_collections(self, client: Any) -> list[str]:
        prefix = self._workspace_prefix
        names: list[str] = []
        offset = 0
        while True:
            page = client.list_collections(limit=100, offset=offset)
            names += [c if isinstance(c, str) else c.name for c in page]
            if len(page) < 100:
                break
            offset += 100
        return [n for n in names if n.startswith(prefix)]

    def _create(self, client: Any, name: str, model_id: str, dim: int) -> Any:
        return client.get_or_create_collection(
            name=name,
            embedding_function=None,
            configuration={"hnsw": {"space": "cosine", "ef_search": self.settings.ef_search}},
            metadata={
                "reme_model_id": model_id,
                "reme_dim": dim,
                "reme_workspace": str(Path(self.context.workspace).resolve()),
            },
        )

    @property
    def _col(self) -> Any:
        if self._collection is None:
            raise ChromaStoreError(
                "the chromadb file store is not open: call open(model_id, dim) first"
            )
        return self._collection

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by ``chunk_id`` (the last of repeated ids wins)."""
        self._col  # noqa: B018 - raises when not open
        latest = {r.chunk_id: r for r in records}
        if not latest:
            return
        ids: list[str] = []
        vectors: list[list[float]] = []
        metadatas: list[dict[str, Any]] = []
        for record in latest.values():
            vector = np.asarray(record.vector, dtype=np.float32).reshape(-1)
            if vector.shape[0] != self._dim:
                raise EmbeddingError(
                    f"vector of {record.chunk_id} has {vector.shape[0]} dimensions, "
                    f"the store was opened for {self._dim} ({self._model_id})"
                )
            _check_direction(vector, f"vector of {record.chunk_id}")
            ids.append(record.chunk_id)
            vectors.append(vector.tolist())
            metadatas.append(record_metadata(record))
        with self._lock, self._errors("upserting vectors"):
            collection = self._col
            batch = self._batch_size()
            for start in range(0, len(ids), batch):
                end = start + batch
                collection.upsert(
                    ids=ids[start:end],
                    embeddings=vectors[start:end],
                    metadatas=metadatas[start:end],
                )

    def _batch_size(self) -> int:
        try:
            return max(1, int(self._client.get_max_batch_size()))
        except Exception:
            return 1000

    def delete_paths(self, paths: Sequence[str]) -> None:
        """Remove every record of these files."""
        wanted = list(dict.fromkeys(paths))
        if not wanted:
            return
        with self._lock, self._errors("deleting vectors"):
            collection = self._col
            for start in range(0, len(wanted), _DELETE_BATCH):
                collection.delete(where={"path": {"$in": wanted[start : start + _DELETE_BATCH]}})

    def search(
        self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None
    ) -> list[tuple[str, float]]:
        """``(chunk_id, cosine similarity)`` best first; every filter is honoured exactly."""
        self._col  # noqa: B018 - raises when not open
        if limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self._dim:
            raise EmbeddingError(
                f"query vector has {query.shape[0]} dimensions, "
                f"the store was opened for {self._dim} ({self._model_id})"
            )
        _check_direction(query, "query vector")
        where, post_paths = where_clause(filters)
        if where is False:
            return []
        with self._lock, self._errors("searching"):
            collection = self._col
            total = collection.count()
            if total == 0:
                return []
            want = limit if post_paths is None else limit * _OVERFETCH
            while True:
                k = min(total, want)
                result = collection.query(
                    query_embeddings=[query.tolist()],
                    n_results=k,
                    where=where or None,
                    include=["distances", "metadatas"],
                )
                ids = result["ids"][0]
                hits: list[tuple[str, float]] = []
                for chunk_id, distance, meta in zip(
                    ids, result["distances"][0], result["metadatas"][0], strict=True
                ):
                    path = (meta or {}).get("path", "")
                    if post_paths is not None and not path_matches(path, post_paths):
                        continue
                    hits.append((chunk_id, 1.0 - float(distance)))
                    if len(hits) == limit:
                        return hits
                if len(ids) < k or k >= total:  # every candidate the where allows was seen
                    return hits
                want = k * _OVERFETCH

    def ids(self) -> set[str]:
        """Every stored chunk id."""
        out: set[str] = set()
        with self._lock, self._errors("listing ids"):
            collection = self._col
            offset = 0
            while True:
                page = collection.get(include=[], limit=_PAGE, offset=offset)["ids"]
                out.update(page)
                if len(page) < _PAGE:
                    return out
                offset += _PAGE

    def clear(self) -> None:
        """Drop every record (the collection is deleted and created again, empty)."""
        with self._lock, self._errors("clearing"):
            name = self._col.name
            self._client.delete_collection(name)
            self._collection = self._create(self._client, name, self._model_id, self._dim)

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``."""
        out: dict[str, Any] = {
            "backend": "chromadb",
            "mode": self.settings.mode,
            "location": self.location,
            "model_id": self._model_id,
            "dim": self._dim,
        }
        if self._collection is not None:
            with self._lock, self._errors("counting"):
                out["collection"] = self._collection.name
                out["vectors"] = self._collection.count()
        return out

    def close(self) -> None:
        """Let go of the client and the lock; ``open`` connects again."""
        with self._lock:
            client, self._client, self._collection = self._client, None, None
            if client is not None and hasattr(client, "close"):
                with contextlib.suppress(Exception):
                    client.close()
            self._release_lock()


@hookimpl
def register_file_stores(register: Callable[[type[FileStore]], None]) -> None:
    """Register the chromadb vector store as ``chromadb``."""
    register(ChromaFileStore)
