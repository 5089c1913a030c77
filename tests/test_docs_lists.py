"""The numbered lists of the docs count 1, 2, 3, ... (a pasted copy of items 4-6 did not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = sorted([*(REPO / "docs").glob("*.md"), REPO / "README.md"])
ITEM = re.compile(r"^(\d+)\. ")


def list_breaks(text: str) -> list[str]:
    """Each numbered item that does not follow item N-1 of its list (or start one at 1)."""
    broken: list[str] = []
    previous = 0  # the list's last number; 0 outside a list
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        item = ITEM.match(line)
        if item:
            value = int(item.group(1))
            if value not in (1, previous + 1):
                broken.append(f"line {number}: item {value} after item {previous}: {line[:50]}")
            previous = value
        elif line and not line[0].isspace():
            previous = 0  # a heading or a paragraph ends the list
    return broken


def test_the_check_finds_a_list_that_restarts_in_the_middle():
    assert list_breaks("1. a\n2. b\n\ntext\n   more\n4. c\n") == [
        "line 6: item 4 after item 0: 4. c"
    ]
    assert list_breaks("1. a\n   b\n\n2. c\n```\n5. code\n```\n") == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_numbered_lists_count_up(page):
    assert list_breaks(page.read_text(encoding="utf-8")) == []
