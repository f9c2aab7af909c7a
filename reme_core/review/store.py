"""Proposals on disk: ``.reme/proposals/<id>.json``, one file each, written atomically."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from reme_core.errors import NotFoundError
from reme_core.review.models import Proposal, ReviewError, check_id
from reme_core.workspace.atomic import atomic_write

FOLDER = "proposals"


class ProposalStore:
    def __init__(self, state_dir: Path):
        self.folder = state_dir / FOLDER

    def path(self, proposal_id: str) -> Path:
        return self.folder / f"{check_id(proposal_id)}.json"

    def save(self, proposal: Proposal) -> None:
        data = json.dumps(proposal.model_dump(mode="json"), indent=1, ensure_ascii=False)
        atomic_write(self.path(proposal.id), (data + "\n").encode("utf-8"))

    def load(self, proposal_id: str) -> Proposal:
        """Proposal ``proposal_id``, or the one proposal whose id starts with it."""
        wanted = check_id(proposal_id)
        path = self.folder / f"{wanted}.json"
        if not path.is_file():
            matches = sorted(p.stem for p in self._files() if p.stem.startswith(wanted))
            if not matches:
                raise NotFoundError(f"no proposal {proposal_id!r}")
            if len(matches) > 1:
                raise ReviewError(
                    f"{proposal_id!r} names {len(matches)} proposals ({', '.join(matches[:5])}); "
                    "give more of the id"
                )
            path = self.folder / f"{matches[0]}.json"
        return self._read(path)

    def all(self) -> tuple[list[Proposal], dict[str, str]]:
        """Every proposal, oldest first, and the files that cannot be read, with the reason."""
        found: list[Proposal] = []
        problems: dict[str, str] = {}
        for path in self._files():
            try:
                found.append(self._read(path))
            except ReviewError as exc:
                problems[path.name] = str(exc)
        found.sort(key=lambda p: (p.created, p.id))
        return found, problems

    def _files(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(
            p
            for p in self.folder.iterdir()
            if p.suffix == ".json" and not p.name.startswith(".") and p.is_file()
        )

    def _read(self, path: Path) -> Proposal:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise NotFoundError(f"no proposal {path.stem!r}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ReviewError(f"proposal file {path.name} cannot be read: {exc}") from None
        try:
            proposal = Proposal.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"]))
            raise ReviewError(
                f"proposal file {path.name} is damaged ({where}: {first['msg']})"
            ) from None
        if proposal.id != path.stem:
            raise ReviewError(f"proposal file {path.name} holds proposal {proposal.id!r}")
        return proposal
