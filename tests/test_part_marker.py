"""A test's part: its `@pytest.mark.part`, its class's, its module's, else its file's name."""

from __future__ import annotations

import pytest

from grader.course.part_marker import PART_MARKER_HELP, part_of_item


class PartRecorder:
    """Records each collected test's part, as the grader's plugins decide it."""

    def __init__(self) -> None:
        self.parts: dict[str, str] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", PART_MARKER_HELP)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.parts.update({item.name: part_of_item(item) for item in items})


def test_the_closest_declaration_wins_and_the_file_name_is_the_default(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_scale="def test_by_file_name(): pass\n",
        test_both=(
            "import pytest\n\npytestmark = pytest.mark.part('scale')\n\n"
            "def test_by_module(): pass\n\n"
            "@pytest.mark.part('shift')\ndef test_by_test(): pass\n\n"
            "@pytest.mark.part('shift')\nclass TestShift:\n"
            "    def test_by_class(self): pass\n\n"
            "    @pytest.mark.part('scale')\n    def test_by_method(self): pass\n\n"
            "@pytest.mark.part(3)\ndef test_malformed(): pass\n"
        ),
    )
    recorder = PartRecorder()
    pytester.inline_run("--collect-only", "-p", "no:cacheprovider", plugins=[recorder])
    assert recorder.parts == {
        "test_by_file_name": "scale",
        "test_by_module": "scale",
        "test_by_test": "shift",
        "test_by_class": "shift",
        "test_by_method": "scale",
        "test_malformed": "",
    }
