"""Write small .sas7bdat fixtures with ReadStat's own sas7bdat writer (tests only).

pyreadstat cannot write sas7bdat from Python, but its compiled writer module links the
whole ReadStat C library, including ``readstat_begin_writing_sas7bdat``, and exports its
symbols. We call that writer through ctypes, so the fixture is a real sas7bdat file made
by the same library that reads it, with values the test chooses. If a pyreadstat build
ever stops exporting these symbols, :func:`write_sas7bdat` fails loudly (never skips).
"""

from __future__ import annotations

import ctypes
import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import pyreadstat._readstat_writer as _writer_module

_STRING, _DOUBLE = 0, 5  # readstat_type_t: READSTAT_TYPE_STRING, READSTAT_TYPE_DOUBLE
_SAS_EPOCH = dt.datetime(1960, 1, 1)
_SINK = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)

#: column kinds: "num" (float or None), "str" (str or None), "date", "datetime"
Column = tuple[str, str, Sequence[object]]


def _library() -> ctypes.CDLL:
    lib = ctypes.CDLL(_writer_module.__file__)
    ptr, c_str = ctypes.c_void_p, ctypes.c_char_p
    signatures = {
        "readstat_writer_init": ([], ptr),
        "readstat_set_data_writer": ([ptr, _SINK], ctypes.c_int),
        "readstat_add_variable": ([ptr, c_str, ctypes.c_int, ctypes.c_size_t], ptr),
        "readstat_variable_set_format": ([ptr, c_str], None),
        "readstat_begin_writing_sas7bdat": ([ptr, ptr, ctypes.c_long], ctypes.c_int),
        "readstat_begin_row": ([ptr], ctypes.c_int),
        "readstat_insert_double_value": ([ptr, ptr, ctypes.c_double], ctypes.c_int),
        "readstat_insert_string_value": ([ptr, ptr, c_str], ctypes.c_int),
        "readstat_insert_missing_value": ([ptr, ptr], ctypes.c_int),
        "readstat_end_row": ([ptr], ctypes.c_int),
        "readstat_end_writing": ([ptr], ctypes.c_int),
        "readstat_writer_free": ([ptr], None),
        "readstat_error_message": ([ctypes.c_int], c_str),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, restype
    return lib


def write_sas7bdat(path: Path, columns: Sequence[Column]) -> None:
    """Write ``columns`` ((name, kind, values), equal lengths) as a sas7bdat file."""
    lib = _library()
    out = bytearray()

    @_SINK
    def sink(data: int, size: int, _ctx: int) -> int:
        out.extend(ctypes.string_at(data, size))
        return size

    def check(code: int) -> None:
        if code != 0:
            raise RuntimeError(lib.readstat_error_message(code).decode())

    writer = lib.readstat_writer_init()
    try:
        check(lib.readstat_set_data_writer(writer, sink))
        variables = []
        for name, kind, values in columns:
            width = max([8, *(len(v.encode()) for v in values if isinstance(v, str))])
            storage = _STRING if kind == "str" else _DOUBLE
            variable = lib.readstat_add_variable(writer, name.encode(), storage, width)
            if kind in ("date", "datetime"):
                lib.readstat_variable_set_format(
                    variable, b"DATE9" if kind == "date" else b"DATETIME20"
                )
            variables.append(variable)
        row_count = len(columns[0][2])
        check(lib.readstat_begin_writing_sas7bdat(writer, None, row_count))
        for row in range(row_count):
            check(lib.readstat_begin_row(writer))
            for variable, (_, kind, values) in zip(variables, columns, strict=True):
                check(_insert(lib, writer, variable, kind, values[row]))
            check(lib.readstat_end_row(writer))
        check(lib.readstat_end_writing(writer))
    finally:
        lib.readstat_writer_free(writer)
    path.write_bytes(bytes(out))


def _insert(lib: ctypes.CDLL, writer: int, variable: int, kind: str, value: object) -> int:
    if value is None:
        return lib.readstat_insert_missing_value(writer, variable)
    if kind == "str":
        return lib.readstat_insert_string_value(writer, variable, str(value).encode())
    if kind == "date":
        assert isinstance(value, dt.date)
        number = float((value - _SAS_EPOCH.date()).days)
    elif kind == "datetime":
        assert isinstance(value, dt.datetime)
        number = (value - _SAS_EPOCH).total_seconds()
    else:
        number = float(value)  # type: ignore[arg-type]
    return lib.readstat_insert_double_value(writer, variable, number)
