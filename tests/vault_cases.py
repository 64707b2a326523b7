"""A test vault written from Obsidian's documented link, tag, alias, property and embed syntax.

Every documented link form, nested folders, the same file name in several folders, aliases,
headings, block ids, embeds, links inside code (not links) and non-ASCII names. `EXPECTED` says,
for every link in the vault, which note it opens (`notes.links` Rule 1; None: unresolved) and
whether its anchor exists; the tests check the pure resolver, the index and the tools against it.
"""

from __future__ import annotations

from pathlib import Path

VAULT: dict[str, str] = {
    "Home.md": """---
title: Home
tags: [index, area/home]
aliases: [Start, Dashboard]
created: 2026-01-04
---
# Home

Where everything starts. #index

- Current project: [[Plan]] and its [[Plan#Goals|goals]]
- The same plan by path: [[Projects/Atlas/Plan]] and [[Projects/Atlas/Plan.md#Risks]]
- A nested heading: [[Plan#Goals#Stretch goals]]
- A block: [[Plan#^budget-line]] and a missing one [[Plan#^no-such-block]]
- Meeting by name: [[Meeting]]
- A person by alias: [[Ana]] and by file name [[Ana Souza|Ana S.]]
- Markdown, from the root: [the plan](Projects/Atlas/Plan.md#Goals)
- Markdown, absolute: [plan again](/Projects/Atlas/Plan.md)
- Markdown, encoded: [dessert](Caf%C3%A9/Cr%C3%A8me%20br%C3%BBl%C3%A9e.md)
- Markdown, angle brackets: [team meeting](<Areas/Team/Meeting.md>)
- Nowhere yet: [[Missing note]] and [gone](Nowhere.md)
- An attachment: ![[diagram.png]]
- Outside: [site](https://example.com/page#part) and <https://example.com>

Jump to [[#Inbox]] below.

## Inbox

Embedded goals: ![[Plan#Goals]]
""",
    "Projects/Atlas/Plan.md": """---
tags:
  - project
  - project/atlas
status: active
due: 2026-03-31
owner: "[[Ana Souza]]"
---
# Atlas plan

Kick-off was in [[Meeting]] (same folder wins) with [[People/Ana Souza|Ana]].
Code is never a link: `[[Home]]` and ``[not](Home.md)``.

```
[[Home]] #not-a-tag
```

    [[Home]] indented code

## Goals

Ship the atlas. #project/atlas

### Stretch goals

A second edition.

## Risks

Budget is tight. ^budget-line

See the sibling [[./Meeting]] and the parent [up](../Atlas.md).
""",
    "Projects/Atlas/Meeting.md": """# Atlas meeting

Notes for [[Plan]] from the [[Projects/Atlas/Plan#Risks|risks]] review.
Raw URL fragments are not tags: https://example.com/#fragment and a#b and #1984.
""",
    "Projects/Atlas.md": """# Atlas

Overview of [[Atlas/Plan]] (a suffix of its path) and [the meeting](Atlas/Meeting.md).
""",
    "Areas/Team/Meeting.md": """---
tags: team, weekly
---
# Weekly team meeting

Agenda lives in [[Home#Inbox]]. #team/weekly
""",
    "Archive/Meeting.md": """# Old meeting

An archived meeting, closer to the root than the others.
Back [[../Home]] and [[Meeting]] (this folder: itself).
""",
    "People/Ana Souza.md": """---
aliases:
  - Ana
  - A. Souza
role: lead
---
# Ana Souza

Leads [[Atlas plan]] (an alias nobody has: unresolved) and [[Plan|the plan]]. ^bio
""",
    "Café/Crème brûlée.md": """# Crème brûlée

Dessert. [[crème brûlée#Steps]] links to itself by name; ![[Home#Inbox]] embeds.

## Steps

Caramelize. #recipe/dessert
""",
    "日本語/メモ.md": """# メモ

日本語のメモ。[[Home]] と [[Café/Crème brûlée|デザート]]。 #日本語
""",
}

# (source note, link text exactly as written) -> (target note or None, anchor found)
EXPECTED: dict[tuple[str, str], tuple[str | None, bool]] = {
    ("Home.md", "[[Plan]]"): ("Projects/Atlas/Plan.md", True),
    ("Home.md", "[[Plan#Goals|goals]]"): ("Projects/Atlas/Plan.md", True),
    ("Home.md", "[[Projects/Atlas/Plan]]"): ("Projects/Atlas/Plan.md", True),
    ("Home.md", "[[Projects/Atlas/Plan.md#Risks]]"): ("Projects/Atlas/Plan.md", True),
    ("Home.md", "[[Plan#Goals#Stretch goals]]"): ("Projects/Atlas/Plan.md", True),
    ("Home.md", "[[Plan#^budget-line]]"): ("Projects/Atlas/Plan.md", True),
    ("Home.md", "[[Plan#^no-such-block]]"): ("Projects/Atlas/Plan.md", False),
    ("Home.md", "[[Meeting]]"): ("Archive/Meeting.md", True),
    ("Home.md", "[[Ana]]"): ("People/Ana Souza.md", True),
    ("Home.md", "[[Ana Souza|Ana S.]]"): ("People/Ana Souza.md", True),
    ("Home.md", "[the plan](Projects/Atlas/Plan.md#Goals)"): ("Projects/Atlas/Plan.md", True),
    ("Home.md", "[plan again](/Projects/Atlas/Plan.md)"): ("Projects/Atlas/Plan.md", True),
    ("Home.md", "[dessert](Caf%C3%A9/Cr%C3%A8me%20br%C3%BBl%C3%A9e.md)"): ("Café/Crème brûlée.md", True),
    ("Home.md", "[team meeting](<Areas/Team/Meeting.md>)"): ("Areas/Team/Meeting.md", True),
    ("Home.md", "[[Missing note]]"): (None, False),
    ("Home.md", "[gone](Nowhere.md)"): (None, False),
    ("Home.md", "![[diagram.png]]"): (None, False),
    ("Home.md", "[[#Inbox]]"): ("Home.md", True),
    ("Home.md", "![[Plan#Goals]]"): ("Projects/Atlas/Plan.md", True),
    ("Projects/Atlas/Plan.md", "[[Ana Souza]]"): ("People/Ana Souza.md", True),
    ("Projects/Atlas/Plan.md", "[[Meeting]]"): ("Projects/Atlas/Meeting.md", True),
    ("Projects/Atlas/Plan.md", "[[People/Ana Souza|Ana]]"): ("People/Ana Souza.md", True),
    ("Projects/Atlas/Plan.md", "[[./Meeting]]"): ("Projects/Atlas/Meeting.md", True),
    ("Projects/Atlas/Plan.md", "[up](../Atlas.md)"): ("Projects/Atlas.md", True),
    ("Projects/Atlas/Meeting.md", "[[Plan]]"): ("Projects/Atlas/Plan.md", True),
    ("Projects/Atlas/Meeting.md", "[[Projects/Atlas/Plan#Risks|risks]]"): ("Projects/Atlas/Plan.md", True),
    ("Projects/Atlas.md", "[[Atlas/Plan]]"): ("Projects/Atlas/Plan.md", True),
    ("Projects/Atlas.md", "[the meeting](Atlas/Meeting.md)"): ("Projects/Atlas/Meeting.md", True),
    ("Areas/Team/Meeting.md", "[[Home#Inbox]]"): ("Home.md", True),
    ("Archive/Meeting.md", "[[../Home]]"): ("Home.md", True),
    ("Archive/Meeting.md", "[[Meeting]]"): ("Archive/Meeting.md", True),
    ("People/Ana Souza.md", "[[Atlas plan]]"): (None, False),
    ("People/Ana Souza.md", "[[Plan|the plan]]"): ("Projects/Atlas/Plan.md", True),
    ("Café/Crème brûlée.md", "[[crème brûlée#Steps]]"): ("Café/Crème brûlée.md", True),
    ("Café/Crème brûlée.md", "![[Home#Inbox]]"): ("Home.md", True),
    ("日本語/メモ.md", "[[Home]]"): ("Home.md", True),
    ("日本語/メモ.md", "[[Café/Crème brûlée|デザート]]"): ("Café/Crème brûlée.md", True),
}

TAGS: dict[str, set[str]] = {
    "Home.md": {"index", "area/home"},
    "Projects/Atlas/Plan.md": {"project", "project/atlas"},
    "Projects/Atlas/Meeting.md": set(),
    "Projects/Atlas.md": set(),
    "Areas/Team/Meeting.md": {"team", "weekly", "team/weekly"},
    "Archive/Meeting.md": set(),
    "People/Ana Souza.md": set(),
    "Café/Crème brûlée.md": {"recipe/dessert"},
    "日本語/メモ.md": {"日本語"},
}


def write_vault(folder: Path) -> None:
    for note_id, text in VAULT.items():
        path = folder / note_id
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
