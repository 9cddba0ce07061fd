from typing import Any

def values(
    out: Any,
    offsets: Any,
    data: Any,
    wide: bool,
    validity: Any | None,
    bit_offset: int,
    indices: Any | None,
    /,
) -> int: ...
