"""notes.daily: Moment.js file-name formats, template variables, and `[workspace.daily]` checks."""

from __future__ import annotations

import datetime

import pytest

from notewarden.config import ConfigError, parse_config
from notewarden.notes.daily import DailyNotes, format_moment, render_template

MOMENT = datetime.datetime(2026, 1, 4, 15, 7, 9)  # a Sunday, ISO week 1 of 2026


@pytest.mark.parametrize(
    ("pattern", "written"),
    [
        ("YYYY-MM-DD", "2026-01-04"),
        ("YY/M/D", "26/1/4"),
        ("dddd, Do MMMM YYYY", "Sunday, 4th January 2026"),
        ("ddd dd d E", "Sun Su 0 7"),
        ("GGGG-[W]WW", "2026-W01"),
        ("DDDD DDD Q", "004 4 1"),
        ("HH:mm:ss h A a hh", "15:07:09 3 PM pm 03"),
        ("[Daily] YYYY [YYYY]", "Daily 2026 YYYY"),
    ],
)
def test_moment_tokens(pattern: str, written: str) -> None:
    assert format_moment(pattern, MOMENT) == written


def test_note_ids_and_templates() -> None:
    assert DailyNotes().note_id(MOMENT.date()) == "2026-01-04.md"
    assert (
        DailyNotes("Journal/", "YYYY/MM/YYYY-MM-DD").note_id(MOMENT.date()) == "Journal/2026/01/2026-01-04.md"
    )
    text = "# {{title}}\n{{date}} {{ time }} {{date:dddd}} {{time:h A}} {{unknown}}\n"
    assert render_template(text, "T", MOMENT) == "# T\n2026-01-04 15:07 Sunday 3 PM {{unknown}}\n"


def config(daily: object) -> dict[str, object]:
    return {"workspace": [{"uri": "file:///srv/a", "daily": daily}], "state_dir": "/tmp/x"}


def test_workspace_daily_settings_are_checked_at_load() -> None:
    loaded = parse_config(config({"folder": "/Daily/", "format": "YYYY-MM-DD", "template": "T/Day.md"}))
    assert list(loaded.daily_notes.values()) == [DailyNotes("Daily", "YYYY-MM-DD", "T/Day.md")]
    for bad, words in (
        ({"format": "../YYYY"}, "not note paths"),
        ({"folder": ".hidden"}, "not note paths"),
        ({"template": 3}, "must be a string"),
        ({"colour": "red"}, "unknown key"),
        ("Daily", "must be a table"),
    ):
        with pytest.raises(ConfigError, match=words):
            parse_config(config(bad))
