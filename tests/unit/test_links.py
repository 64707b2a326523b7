"""notes.markdown's vault syntax and notes.links' resolution and move rewriting, on the test vault
written from Obsidian's documented syntax (tests/vault_cases.py)."""

from __future__ import annotations

import pytest

from notewarden.notes.links import MemoryVault, anchor_found, relink, resolve, rewrite_for_move
from notewarden.notes.markdown import NoteFacts, parse_note, tag_key
from notewarden.notes.model import extract_title, note_stem
from tests.unit.test_markdown import TITLES
from tests.vault_cases import EXPECTED, TAGS, VAULT


def facts(note_id: str, text: str | None = None) -> NoteFacts:
    return parse_note(VAULT[note_id] if text is None else text, note_stem(note_id))


def vault() -> MemoryVault:
    return MemoryVault(VAULT, {n: facts(n).aliases for n in VAULT})


def test_every_link_is_found_once_with_its_exact_span_and_none_inside_code() -> None:
    found: dict[tuple[str, str], int] = {}
    for note_id, text in VAULT.items():
        for link in facts(note_id).links:
            written = text[link.span[0] : link.span[1]]
            found[(note_id, written)] = found.get((note_id, written), 0) + 1
            assert text.count("\n", 0, link.span[0]) + 1 == link.line
            assert link.path_span[0] >= link.span[0] and link.path_span[1] <= link.span[1]
    assert set(found) == set(EXPECTED)
    assert set(found.values()) == {1}


def test_each_link_opens_the_note_obsidian_would_open_and_checks_its_anchor() -> None:
    lookup = vault()
    for note_id in VAULT:
        for link in facts(note_id).links:
            written = VAULT[note_id][link.span[0] : link.span[1]]
            target, anchor_ok = EXPECTED[(note_id, written)]
            resolved = resolve(link, note_id, lookup)
            assert resolved.target == target, (note_id, written, resolved)
            if target is not None:
                goal = facts(target)
                blocks = [b.id for b in goal.block_ids]
                assert anchor_found(link.anchor, link.style, goal.headings, blocks) == anchor_ok, written


def test_tags_from_front_matter_and_text_not_code_fragments_or_numbers() -> None:
    for note_id, expected in TAGS.items():
        assert {tag_key(t.name) for t in facts(note_id).tags} == expected, note_id


def test_properties_aliases_and_malformed_front_matter() -> None:
    plan = facts("Projects/Atlas/Plan.md")
    assert plan.properties is not None and plan.properties["due"] == "2026-03-31"
    assert plan.properties["tags"] == ["project", "project/atlas"]
    assert facts("People/Ana Souza.md").aliases == ("Ana", "A. Souza")
    assert facts("Home.md").aliases == ("Start", "Dashboard")
    one = parse_note("---\naliases: Solo alias\ntags: a, b c\n---\n", "x")
    assert one.aliases == ("Solo alias",) and [t.name for t in one.tags] == ["a", "b", "c"]
    listed = parse_note("---\ntags: ['#d', 7, '1984', 'x y', e/f/]\n---\n", "x")
    assert [t.name for t in listed.tags] == ["d", "e/f"]
    broken = parse_note("---\ntags: [oops\n---\n# Still a note #kept\n", "x")
    assert broken.properties is None and broken.property_error and "YAML" in broken.property_error
    assert broken.title == "Still a note #kept" and [t.name for t in broken.tags] == ["kept"]
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    bomb += (
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n---\n"
    )
    assert parse_note(bomb, "x").property_error == "front matter expands to more than 10000 values"


@pytest.mark.parametrize("text", [*TITLES, *VAULT.values()])
def test_the_one_pass_title_is_the_title(text: str) -> None:
    assert parse_note(text, "stem name").title == extract_title(text.encode(), "dir/stem name.md")


def test_block_ids_end_a_line_and_escapes_and_code_hide_syntax() -> None:
    text = "para ^one\n\n- item\n\n^two\n\nnot^three and `^four`\n\\[[escaped]] \\#no [[a\\|b]]\n"
    found = parse_note(text, "x")
    assert [(b.id, b.line) for b in found.block_ids] == [("one", 1), ("two", 5)]
    assert [(link.path, link.display) for link in found.links] == [("a", "b")]
    assert found.tags == ()


def rewrite_all(moved_from: str, moved_to: str) -> dict[str, str]:
    """Every note's text after the move, by its id after the move."""
    before = vault()
    after = before.moved(moved_from, moved_to)
    texts = {}
    for note_id, text in VAULT.items():
        now = moved_to if note_id == moved_from else note_id
        new_text, _ = rewrite_for_move(
            text,
            facts(note_id).links,
            note_before=note_id,
            note_after=now,
            moved_from=moved_from,
            moved_to=moved_to,
            before=before,
            after=after,
        )
        texts[now] = new_text
    return texts


MOVES = [
    ("Projects/Atlas/Plan.md", "Projects/Atlas/Atlas plan.md"),
    ("Projects/Atlas/Plan.md", "Archive/2026/Plan.md"),
    ("Café/Crème brûlée.md", "Desserts/Crème brûlée au café.md"),
    ("People/Ana Souza.md", "Team/Ana S.md"),
    ("Archive/Meeting.md", "Archive/Old/Meeting 2020.md"),
    ("Home.md", "Start here/Home page.md"),
    ("Projects/Atlas/Meeting.md", "Meeting.md"),
]


@pytest.mark.parametrize(("moved_from", "moved_to"), MOVES)
def test_a_move_rewrites_exactly_the_links_whose_target_would_change(moved_from: str, moved_to: str) -> None:
    before = vault()
    after = before.moved(moved_from, moved_to)
    texts = rewrite_all(moved_from, moved_to)
    for note_id, old_text in VAULT.items():
        now = moved_to if note_id == moved_from else note_id
        old_links = facts(note_id).links
        new_links = facts(now, texts[now]).links
        assert len(new_links) == len(old_links)
        must_change = False
        for old, new in zip(old_links, new_links, strict=True):
            was = resolve(old, note_id, before).target
            wanted = moved_to if was == moved_from else was
            assert (new.style, new.embed, new.anchor, new.display) == (
                old.style,
                old.embed,
                old.anchor,
                old.display,
            )
            if was is None:  # unresolved: left as written (it may name the moved note now)
                assert texts[now][new.span[0] : new.span[1]] == old_text[old.span[0] : old.span[1]]
                continue
            assert resolve(new, now, after).target == wanted, (note_id, old, new)
            stays = resolve(old, now, after).target == wanted
            must_change |= not stays
            if stays:
                assert texts[now][new.span[0] : new.span[1]] == old_text[old.span[0] : old.span[1]]
        assert (texts[now] != old_text) == must_change, note_id
        outside = [(a, b) for a, b in zip(old_links, new_links, strict=True)]
        gaps_old = _between(old_text, [a.span for a, _ in outside])
        gaps_new = _between(texts[now], [b.span for _, b in outside])
        assert gaps_old == gaps_new  # every byte outside the links is the same


def _between(text: str, spans: list[tuple[int, int]]) -> list[str]:
    pieces, last = [], 0
    for start, end in spans:
        pieces.append(text[last:start])
        last = end
    return [*pieces, text[last:]]


def test_rewritten_links_keep_their_form_suffix_anchor_and_encoding() -> None:
    texts = rewrite_all("Projects/Atlas/Plan.md", "Archive/2026/Atlas plan.md")
    home = texts["Home.md"]
    for expected in (
        "[[Atlas plan]]",
        "[[Atlas plan#Goals|goals]]",
        "[[Archive/2026/Atlas plan]]",
        "[[Archive/2026/Atlas plan.md#Risks]]",
        "[[Atlas plan#^budget-line]]",
        "[the plan](Archive/2026/Atlas%20plan.md#Goals)",
        "[plan again](/Archive/2026/Atlas%20plan.md)",
        "![[Atlas plan#Goals]]",
    ):
        assert expected in home
    moved = texts["Archive/2026/Atlas plan.md"]
    assert "[[../../Projects/Atlas/Meeting]]" in moved  # the relative link followed its note
    assert "[up](../../Projects/Atlas.md)" in moved
    assert "[[Meeting]]" not in moved.split("## Goals")[0]  # no longer in Meeting's folder
    dessert = rewrite_all("Café/Crème brûlée.md", "Desserts/Crème brûlée au café.md")["Home.md"]
    assert "[dessert](Desserts/Cr%C3%A8me%20br%C3%BBl%C3%A9e%20au%20caf%C3%A9.md)" in dessert
    team = rewrite_all("Areas/Team/Meeting.md", "Areas/Team/Weekly meeting.md")["Home.md"]
    assert "[team meeting](<Areas/Team/Weekly meeting.md>)" in team


def moved_texts(notes: dict[str, str], moved_from: str, moved_to: str) -> dict[str, str]:
    """Every note's text after a move in a small vault, by its id after the move."""
    before = MemoryVault(notes)
    texts = {}
    for note_id, text in notes.items():
        now = moved_to if note_id == moved_from else note_id
        texts[now] = relink(text, note_id, now, moved_from, moved_to, before)[0]
    return texts


def test_a_bare_name_stays_a_name_even_when_it_resolved_in_its_own_folder() -> None:
    notes = {"A/Target.md": "# T\n", "A/Linker.md": "[[Target]] [[Target|t]]\n", "C/Other.md": "[[Target]]\n"}
    texts = moved_texts(notes, "A/Target.md", "B/Renamed.md")
    assert texts["A/Linker.md"] == "[[Renamed]] [[Renamed|t]]\n"
    assert texts["C/Other.md"] == "[[Renamed]]\n"


def test_a_name_no_longer_unique_becomes_the_path_from_the_root() -> None:
    notes = {"P/S/Near.md": "[[Dup]]\n", "P/S/Dup.md": "# S\n", "P/O/Dup.md": "# O\n"}
    texts = moved_texts(notes, "P/S/Near.md", "P/Near.md")
    assert texts["P/Near.md"] == "[[P/S/Dup]]\n"


def test_a_move_that_would_capture_a_link_rewrites_it_to_keep_its_target() -> None:
    texts = rewrite_all("Projects/Atlas/Meeting.md", "Meeting.md")
    assert "[[Archive/Meeting]]" in texts["Home.md"]  # [[Meeting]] meant the archived one
    assert "[[Meeting]] (same folder wins)" in texts["Projects/Atlas/Plan.md"]  # now the root one: same note


SKIPPING_CASES = [
    *VAULT.values(),
    "# T\n\npara [[a]] #t\n\n- item [b](c.md) ^id\n- [[d|e]]\n\n> quoted [[f]]\n\nSetext\n===\n",
    "no marks at all\n\njust text\n",
    "[[a]]\n\n    [[indented code]]\n",
    "x `[[code]]` [[y]]\n",
    "<div>\n[[in html]]\n</div>\n\n[[after]]\n",
    "~~~\n[[fenced]]\n~~~\n[[z]]\n",
    "[a\n\nb](c.md) [[ok]]\n",
]


@pytest.mark.parametrize("text", SKIPPING_CASES)
def test_skipping_the_block_parse_finds_the_same_facts(text: str) -> None:
    full, quick = parse_note(text, "stem"), parse_note(text, "stem", with_headings=False)
    assert (quick.title, quick.tags, quick.links, quick.block_ids) == (
        full.title,
        full.tags,
        full.links,
        full.block_ids,
    )
