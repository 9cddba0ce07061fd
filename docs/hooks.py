"""A build hook: the docstrings are written in reStructuredText habits that mkdocstrings
renders as Markdown. Sphinx roles (``:class:`X```) would show their colons, and a
paragraph introducing a literal block ends in ``::``. This turns ``:role:`~a.b.X``` into
plain code ``X`` (the last part, as Sphinx's ``~`` shows it) and ``::`` into ``:``."""

from __future__ import annotations

import re
from typing import Any

_LITERAL_INTRO = re.compile(r"::</p>")
_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const):<code>~?([^<]*)</code>")


def _short(match: re.Match[str]) -> str:
    target = match.group(1)
    return f"<code>{target.rsplit('.', 1)[-1] if match.group(0).count('~') else target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """Rewrite Sphinx roles left in rendered docstrings into plain code spans."""
    return _LITERAL_INTRO.sub(":</p>", _ROLE.sub(_short, html))
