"""Notes as HTML: Markdown through markdown-it-py (raw HTML off), wikilinks resolved the way the
index resolved them, and the result passed through the nh3 sanitiser, so a note cannot run
script in the studio whatever it contains. Also search-snippet highlighting and diff lines.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict
from markupsafe import Markup, escape

Href = Callable[[str], str]
"""A note path -> the studio URL that shows it."""

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5",
    "h6", "hr", "i", "img", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "sup",
    "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "span": {"class", "title"},
    "code": {"class"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
}
URL_SCHEMES = {"http", "https", "mailto"}
SNIPPET_CHARS = 320

_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_WORD = re.compile(r"[\w\u4e00-\u9fff]+", re.UNICODE)


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    """``[[target#anchor|alias]]`` (and ``![[...]]``) as one ``wikilink`` token."""
    src, pos = state.src, state.pos
    if src[pos] not in "![":
        return False
    found = _WIKILINK.match(src, pos)
    if found is None or (src[pos] == "!" and not found.group(0).startswith("![[")):
        return False
    if not silent:
        inner = found.group(1)
        target, alias = inner, None
        if "|" in inner:
            target, alias = inner.split("|", 1)
            if target.endswith("\\"):  # an escaped pipe inside a Markdown table
                target = target[:-1]
        raw, anchor = target, None
        if "#" in target:
            raw, anchor = target.split("#", 1)
        token = state.push("wikilink", "", 0)
        token.meta = {
            "raw": raw.strip(),
            "anchor": (anchor or "").strip() or None,
            "alias": (alias or "").strip() or None,
        }
        token.content = found.group(0)
    state.pos = found.end()
    return True


def _render_wikilink(
    self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    meta = tokens[idx].meta
    raw = meta["raw"]
    if not raw:  # [[#heading]]: a link inside the note itself
        return f'<span class="wikilink">{escape(meta["anchor"] or "")}</span>'
    label = meta["alias"] or (f"{raw} > {meta['anchor']}" if meta["anchor"] else raw)
    link = env.get("links", {}).get(raw)
    if link is not None and link.get("state") == "resolved" and link.get("target"):
        target = link["target"]
        return (
            f'<a class="wikilink" href="{escape(env["href"](target))}" '
            f'title="{escape(target)}">{escape(label)}</a>'
        )
    state = link.get("state", "missing") if link is not None else "missing"
    why = (
        f"ambiguous: several notes are named {raw}"
        if state == "ambiguous"
        else f"dangling: no note {raw}"
    )
    return (
        f'<span class="wikilink dangling" title="{escape(why)}">{escape(label)}'
        f'<span class="visually-hidden"> ({escape(state)} link)</span></span>'
    )


def _render_link_open(
    self: RendererHTML, tokens: list[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    """Relative Markdown links to notes open in the studio instead of going nowhere."""
    token = tokens[idx]
    href = str(token.attrGet("href") or "")
    parts = urlsplit(href)
    if href and not parts.scheme and not parts.netloc and not href.startswith(("/", "#")):
        folder = posixpath.dirname(env.get("source", ""))
        target = posixpath.normpath(posixpath.join(folder, unquote(parts.path)))
        if not target.startswith(".."):
            token.attrSet("href", env["href"](target))
    return self.renderToken(tokens, idx, options, env)


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("link_open", _render_link_open)
    return md


_MD = _markdown()


def sanitise(html: str) -> str:
    """Only harmless tags, attributes and URL schemes survive (no script, no event handlers,
    no javascript: or data: links, no style)."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
    )


def render_note(body: str, source: str, links: Iterable[Mapping[str, Any]], href: Href) -> Markup:
    """A note body (frontmatter already removed) as safe HTML. ``links`` are the note's
    outbound links as the index resolved them (the ``links`` operation)."""
    by_raw = {str(link["raw"]): dict(link) for link in links}
    html = _MD.render(body, {"links": by_raw, "href": href, "source": source})
    return Markup(sanitise(html))


def query_terms(query: str) -> list[str]:
    return sorted({t.lower() for t in _WORD.findall(query) if len(t) > 1}, key=len, reverse=True)


def highlight(text: str, query: str, limit: int = SNIPPET_CHARS) -> Markup:
    """An escaped excerpt of ``text`` around the first query term, terms in ``<mark>``."""
    terms = query_terms(query)
    pattern = re.compile("|".join(re.escape(t) for t in terms), re.IGNORECASE) if terms else None
    first = pattern.search(text) if pattern is not None else None
    start = max(0, first.start() - limit // 3) if first is not None else 0
    excerpt = text[start : start + limit]
    prefix = "\u2026" if start > 0 else ""
    suffix = "\u2026" if start + limit < len(text) else ""
    if pattern is None:
        return Markup(escape(prefix + excerpt + suffix))
    out: list[str] = [str(escape(prefix))]
    last = 0
    for found in pattern.finditer(excerpt):
        out.append(str(escape(excerpt[last : found.start()])))
        out.append(f"<mark>{escape(found.group(0))}</mark>")
        last = found.end()
    out.append(str(escape(excerpt[last:] + suffix)))
    return Markup("".join(out))


def diff_lines(diff: str) -> list[tuple[str, str]]:
    """A unified diff as ``(css class, line)`` pairs."""
    lines = []
    for line in diff.splitlines():
        if line.startswith(("diff --git", "index ", "new file", "deleted file", "similarity")):
            kind = "meta"
        elif line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        lines.append((kind, line))
    return lines


def text_diff(before: str, after: str, before_name: str, after_name: str) -> str:
    """A unified diff of two texts, for a conflict."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=before_name,
            tofile=after_name,
        )
    )
