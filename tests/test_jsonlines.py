"""`grader.sandbox.jsonlines`: objects out of a byte stream as it arrives, one a line, bounded."""

from __future__ import annotations

from grader.sandbox.jsonlines import JsonLines


def test_a_line_split_across_chunks_is_read_once_complete() -> None:
    lines = JsonLines(100)
    assert lines.feed(b'{"a": 1}\n{"b"') == [{"a": 1}]
    assert lines.feed(b": 2}\n") == [{"b": 2}]


def test_lines_that_are_not_json_objects_are_skipped() -> None:
    lines = JsonLines(100)
    assert lines.feed(b'[1]\nnot json\n\xff\xfe\n{"c": 3}\n') == [{"c": 3}]


def test_an_overlong_line_is_dropped_as_it_arrives_and_the_next_one_is_read() -> None:
    lines = JsonLines(20)
    assert lines.feed(b'{"long": "' + b"x" * 30) == []
    assert lines.feed(b"y" * 30) == []
    assert lines.feed(b'"}\n{"d": 4}\n') == [{"d": 4}]
    assert lines.feed(b'{"long": "' + b"x" * 30 + b'"}\n{"e": 5}\n') == [{"e": 5}]
