"""Write the image example: a small PNG in WORKSPACE/resource/inbox/ and a scripted model's answer.

    python examples/images/make_example.py WORKSPACE SCRIPT

The PNG is drawn with Pillow (a sign reading "PIER 7 FERRY 09:40"). SCRIPT (keep it outside the
workspace) holds the one answer the ``scripted`` model gives auto_resource: a description that
echoes the image's id (the start of its sha256) and file name, as a real vision model is asked to.
"""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path

from PIL import Image, ImageDraw

FILE = "harbour-sign.png"


def png() -> bytes:
    image = Image.new("RGB", (160, 60), "navy")
    draw = ImageDraw.Draw(image)
    draw.rectangle((4, 4, 155, 55), outline="white", width=2)
    draw.text((14, 14), "PIER 7", fill="white")
    draw.text((14, 32), "FERRY 09:40", fill="yellow")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def answer(data: bytes) -> dict[str, object]:
    return {
        "image_id": hashlib.sha256(data).hexdigest()[:16],
        "file_name": FILE,
        "name": "Ferry departure sign at pier 7",
        "description": "A photo of the harbour sign giving the morning ferry's time.",
        "shows": "A navy blue sign with a white border at the harbour, announcing the ferry.",
        "text": "PIER 7\nFERRY 09:40",
        "key_points": ["The ferry leaves pier 7 at 09:40."],
    }


def main(workspace: Path, script: Path) -> None:
    data = png()
    inbox = workspace / "resource" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    (inbox / FILE).write_bytes(data)
    script.write_text(json.dumps([answer(data)], indent=2) + "\n", encoding="utf-8")
    print(f"wrote {inbox / FILE} and {script}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
