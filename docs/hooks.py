"""A build hook: docstrings cross-reference in Sphinx's roles (``:class:`X```); mkdocstrings
renders those as text with the role's colons showing. This turns ``:role:`~a.b.X``` into
plain code ``X`` (the last part, as Sphinx's ``~`` shows it) in the built pages."""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj|const):<code>~?([^<]*)</code>")


def _short(match: re.Match[str]) -> str:
    target = match.group(1)
    return f"<code>{target.rsplit('.', 1)[-1] if match.group(0).count('~') else target}</code>"


def on_page_content(html: str, **kwargs: Any) -> str:
    """Rewrite Sphinx roles left in rendered docstrings into plain code spans."""
    return _ROLE.sub(_short, html)
