"""The memory of parsed documents (``_project._recent.Recent``): found by content among
texts of the same length, bounded by count and by bytes, newest first."""

from __future__ import annotations

from datom_core._project._recent import Recent


def _copy(raw: bytes) -> bytes:
    return bytes(bytearray(raw))  # equal bytes, another object


def test_a_text_is_found_by_its_bytes_and_a_miss_is_none() -> None:
    kept: Recent[int] = Recent(8)
    texts = [b"a" * 10, b"b" * 10, b"c" * 11, b"d"]
    for i, text in enumerate(texts):
        kept.put(text, i)
    assert [kept.get(_copy(t)) for t in texts] == [0, 1, 2, 3]
    assert kept.get(b"e" * 10) is None and kept.get(b"") is None


def test_the_oldest_go_past_the_count_and_past_the_size_but_the_newest_stays() -> None:
    kept: Recent[int] = Recent(3, size=100)
    for i, text in enumerate([b"x" * 10, b"y" * 10, b"z" * 20, b"w" * 70]):
        kept.put(text, i)
    assert kept.values() == [3, 2, 1] and kept.get(b"x" * 10) is None
    kept.put(b"q" * 30, 4)  # 10 + 20 + 70 + 30 bytes: the oldest go until 100 fit
    assert kept.values() == [4, 3]
    kept.put(b"k" * 500, 5)  # alone over the size: kept, everything else dropped
    assert kept.values() == [5] and kept.get(b"w" * 70) is None


def test_the_same_object_is_replaced_and_an_equal_duplicate_found_newest_first() -> None:
    kept: Recent[str] = Recent(4)
    text = b"doc"
    kept.put(text, "first")
    kept.put(text, "second")
    assert kept.values() == ["second"]
    twin = _copy(text)
    kept.put(twin, "twin")
    assert kept.get(text) == "second"  # the same object first
    assert kept.get(twin) == "twin" and kept.get(_copy(text)) == "twin"
    assert kept.values() == ["twin", "second"]


def test_parsed_keeps_what_it_parsed_and_not_a_failure() -> None:
    kept: Recent[int] = Recent(4)
    calls: list[bytes] = []

    def parse(raw: bytes) -> int:
        calls.append(raw)
        if raw == b"bad":
            raise ValueError(raw)
        return len(raw)

    assert kept.parsed(b"four", parse) == 4 and kept.parsed(_copy(b"four"), parse) == 4
    for _ in range(2):
        try:
            kept.parsed(b"bad", parse)
        except ValueError:
            pass
    assert calls == [b"four", b"bad", b"bad"]


def test_a_forgotten_text_is_dropped_and_its_bytes_no_longer_count() -> None:
    kept: Recent[int] = Recent(8, size=30)
    a, b, c = b"a" * 10, b"b" * 10, b"c" * 10
    for i, text in enumerate((a, b, c)):
        kept.put(text, i)
    kept.forget(_copy(b))  # another object with the same bytes: not this entry
    assert kept.values() == [2, 1, 0]
    kept.forget(b)
    assert kept.values() == [2, 0] and kept.get(_copy(b)) is None
    kept.put(b"d" * 10, 3)  # 30 bytes again: nothing had to go
    assert kept.values() == [3, 2, 0]
