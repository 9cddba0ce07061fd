"""Error remedies in the words of the command line.

The library's messages name the Python call that fixes a problem (``history()``,
``validate(fix=True)``...), often beside the command (``history() / datom history``). A
user of ``datom`` has no Python session: the report names the command alone.
"""

from __future__ import annotations

import re

__all__ = ["PYTHON_CALL", "cli_remedies"]

# "call() / datom command": the command is already there; the call goes.
_PAIRED = re.compile(r"\b[A-Za-z_][\w.]*\([^()]*\) / (datom [a-z-]+(?: --[a-z-]+)?)")

# A call a message may name on its own, and the command that does the same.
_COMMANDS: tuple[tuple[str, str], ...] = (
    (r"validate\(fix=True\)", "datom validate --fix"),
    (r"validate\(\)", "datom validate"),
    (r"tables\(\)", "datom list"),
    (r"history\(\)", "datom history TABLE"),
    (r"clone\(\)", "datom clone REMOTE PATH"),
    (
        r'init_repo\(path, project, store, mode="product", set="<name>"\)',
        'datom init PATH --project NAME --mode product --set "<name>"',
    ),
    (r"init_repo\([^()]*\)", "datom init PATH --project NAME"),
    (r"scan_inbox\([^()]*\)", "datom scan PATH"),
    (r"update_members\(\)|update_members\b", "datom set write --update"),
    (r"write_set\([^()]*\)", "datom set write"),
    (r"member\(\)", "datom set write --member"),
    (r"fetch_and_reset\(\)", "datom validate (it fetches the remote)"),
    (r"read\(\)", "datom read"),
    (r"write\(\)", "datom sync"),
    (r"pass store= to connect\(\)", "pass --store URL"),
    (r"connect\(store=[^()]*\)", "--store URL --project NAME"),
    (r"member\.fetch\(store=(?:[^()]|\([^()]*\))*\)", "--store URL --project NAME"),
    (r"member\.with_tags\([^()]*\)", "datom set write --member-tag TABLE:KEY=VALUE"),
    (r"sync with continue_on_error=True", "run datom sync without --stop-on-error"),
    (r"sync\(\)", "datom sync"),
    (r"content=True", "--verify content"),
    (
        r"use MetadataRepo\.open\(\)",
        "it is a clone already (datom --repo PATH ...), or init another PATH",
    ),
    (r"MetadataRepo\.init\(\) or MetadataRepo\.clone\(\)", "datom init or datom clone"),
    (r"MetadataRepo\.clone\([^()]*\)", "datom clone REMOTE PATH"),
    (
        r"pass store= \(that project's store\) to member\.fetch\(\)",
        "pass --source PROJECT=STORE_URL",
    ),
    (r"without MetadataRepo\.lock\(\)", "at the same time (run the command again)"),
)
_TRANSLATED = [(re.compile(r"(?<![\w.])" + pattern), command) for pattern, command in _COMMANDS]

_TABLE = re.compile(r"\btable '([^']+)'")
_BARE_HISTORY = re.compile(r"\bdatom history(?= *[).;,]| *$)")

#: What a remedy left in Python looks like: ``name()`` or ``name(arg=...)``.
PYTHON_CALL = re.compile(
    r"(?<![\w.])[A-Za-z_][\w.]*\((?!s\))(?:[a-z_]+=[^()]*|[^()]{0,40})?\)|\b[a-z_]+=True\b"
)


def cli_remedies(message: str) -> str:
    """``message`` with every remedy it names as a Python call named as a command."""
    message = _PAIRED.sub(r"\1", message)
    for pattern, command in _TRANSLATED:
        message = pattern.sub(command, message)
    # "datom history" alone: name the table the message is about, ready to run.
    named = _TABLE.search(message)
    table = f"'{named.group(1)}'" if named and " " in named.group(1) else None
    table = table or (named.group(1) if named else "TABLE")
    return _BARE_HISTORY.sub(f"datom history {table}", message)
