"""Daily notes: which note is a day's, and the text a new one starts with. Pure: no I/O.

Rule 1: a day's note is `<folder>/<date formatted>.md`, where the format uses the tokens of
Obsidian's Daily notes plugin (Moment.js): `YYYY YY Q MMMM MMM MM M DDDD DDD DD Do D dddd ddd dd d
E GGGG WW W` for dates, `HH H hh h mm m ss s A a` for times, and `[...]` for literal text (English
month and day names). The default is Obsidian's: the workspace root and `YYYY-MM-DD`. A `/` in the
format makes folders (`YYYY/MM/YYYY-MM-DD`).

Rule 2: a new day's note is the configured template note with Obsidian's template variables
replaced: `{{date}}` (YYYY-MM-DD), `{{time}}` (HH:mm), `{{date:FORMAT}}`, `{{time:FORMAT}}` and
`{{title}}` (the note's file name). Without a template it is a `# <title>` heading.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DEFAULT_FORMAT", "DailyNotes", "format_moment", "render_template"]

DEFAULT_FORMAT = "YYYY-MM-DD"

_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


Moment = datetime.datetime
_TOKENS: dict[str, Callable[[Moment], str]] = {
    "YYYY": lambda m: f"{m.year:04}",
    "YY": lambda m: f"{m.year % 100:02}",
    "Q": lambda m: str((m.month - 1) // 3 + 1),
    "MMMM": lambda m: _MONTHS[m.month - 1],
    "MMM": lambda m: _MONTHS[m.month - 1][:3],
    "MM": lambda m: f"{m.month:02}",
    "M": lambda m: str(m.month),
    "DDDD": lambda m: f"{m.timetuple().tm_yday:03}",
    "DDD": lambda m: str(m.timetuple().tm_yday),
    "DD": lambda m: f"{m.day:02}",
    "Do": lambda m: _ordinal(m.day),
    "D": lambda m: str(m.day),
    "dddd": lambda m: _DAYS[m.weekday()],
    "ddd": lambda m: _DAYS[m.weekday()][:3],
    "dd": lambda m: _DAYS[m.weekday()][:2],
    "d": lambda m: str(m.isoweekday() % 7),
    "E": lambda m: str(m.isoweekday()),
    "GGGG": lambda m: f"{m.isocalendar()[0]:04}",
    "WW": lambda m: f"{m.isocalendar()[1]:02}",
    "W": lambda m: str(m.isocalendar()[1]),
    "HH": lambda m: f"{m.hour:02}",
    "H": lambda m: str(m.hour),
    "hh": lambda m: f"{(m.hour - 1) % 12 + 1:02}",
    "h": lambda m: str((m.hour - 1) % 12 + 1),
    "mm": lambda m: f"{m.minute:02}",
    "m": lambda m: str(m.minute),
    "ss": lambda m: f"{m.second:02}",
    "s": lambda m: str(m.second),
    "A": lambda m: "AM" if m.hour < 12 else "PM",
    "a": lambda m: "am" if m.hour < 12 else "pm",
}
_FORMAT = re.compile(r"\[([^\]]*)\]|" + "|".join(sorted(_TOKENS, key=len, reverse=True)))
_VARIABLE = re.compile(r"\{\{\s*(date|time|title)\s*(?::([^}]*))?\}\}")


def format_moment(pattern: str, moment: Moment) -> str:
    """Rule 1: `moment` written with Moment.js tokens; other characters stay as they are."""
    return _FORMAT.sub(
        lambda t: t.group(1) if t.group(1) is not None else _TOKENS[t.group()](moment), pattern
    )


@dataclass(frozen=True, slots=True)
class DailyNotes:
    """A workspace's `[workspace.daily]` settings."""

    folder: str = ""
    format: str = DEFAULT_FORMAT
    template: str | None = None
    """The id of the template note, or None."""

    def note_id(self, day: datetime.date) -> str:
        name = format_moment(self.format, datetime.datetime.combine(day, datetime.time()))
        return "/".join(p for p in (self.folder.strip("/"), name + ".md") if p)


def render_template(template: str, title: str, now: Moment) -> str:
    """Rule 2: the template's variables replaced (`now` carries the day and the time of creation)."""

    def value(found: re.Match[str]) -> str:
        name, pattern = found.group(1), found.group(2)
        if name == "title":
            return title
        default = DEFAULT_FORMAT if name == "date" else "HH:mm"
        return format_moment(pattern.strip() if pattern else default, now)

    return _VARIABLE.sub(value, template)
