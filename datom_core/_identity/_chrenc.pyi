from typing import Any

def values(
    out: Any, offsets: Any, data: Any, validity: Any | None, start: int, count: int, wide: bool, /
) -> int: ...
