"""Porter stemming exactly as SQLite's FTS5 `porter` tokenizer does it, so that every store finds the
same words ('sharing' finds 'shared' on PostgreSQL too).

Rule 1: one stemmer for every store. The files index and the SQLite store let FTS5 stem (`porter
unicode61 remove_diacritics 2`); PostgreSQL gets the same stems from here, computed when a row is
written (`notes.derived` Rule 4) and for each query term. PostgreSQL's own `english` configuration
was not taken: it is Snowball's "Porter2" (another algorithm: 'generously' -> 'generous', FTS5
'gener'), and its parser reads `reports/tps.md` as one word; a word stemmed two ways is a note found
on one store and missed on another.

Rule 2: the algorithm is FTS5's, byte for byte (sqlite/ext/fts5/fts5_tokenize.c): it works on the
token's UTF-8 bytes, only tokens of 3 to 64 bytes are stemmed, only a-z count as letters (any other
byte is a consonant), a suffix is tried only when the word is longer than it, and within a step the
first suffix that matches is the only one tried, whether its condition holds or not.
tests/unit/test_stemming.py compares this with FTS5 itself on every word of the relevance vault and
the test vault.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache

__all__ = ["stem"]

_MAX_TOKEN = 64
_VOWELS = frozenset(b"aeiou")


def _vowel(c: int, y_is_vowel: bool) -> bool:
    return c in _VOWELS or (y_is_vowel and c == ord("y"))


def _gobble_vc(stem: bytes, consonant_before: bool) -> int:
    """The length of the first vowel run then consonant in `stem`, plus one; 0 when there is none."""
    consonant = consonant_before
    i = 0
    while i < len(stem):
        consonant = not _vowel(stem[i], consonant)
        if not consonant:
            break
        i += 1
    i += 1
    while i < len(stem):
        consonant = not _vowel(stem[i], consonant)
        if consonant:
            return i + 1
        i += 1
    return 0


def _m_gt0(stem: bytes) -> bool:
    return _gobble_vc(stem, False) > 0


def _m_gt1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) > 0


def _m_eq1(stem: bytes) -> bool:
    n = _gobble_vc(stem, False)
    return bool(n) and _gobble_vc(stem[n:], True) == 0


def _o_star(stem: bytes) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y."""
    if stem[-1:] in (b"w", b"x", b"y"):
        return False
    mask, consonant = 0, False
    for c in stem:
        consonant = not _vowel(c, consonant)
        mask = (mask << 1) + consonant
    return (mask & 0b111) == 0b101


def _m_gt1_s_or_t(stem: bytes) -> bool:
    return stem[-1:] in (b"s", b"t") and _m_gt1(stem)


def _has_vowel(stem: bytes) -> bool:
    return any(_vowel(c, i > 0) for i, c in enumerate(stem))


Condition = Callable[[bytes], bool] | None
Rule = tuple[bytes, Condition, bytes, bool]
"""(suffix, condition on the stem before it, replacement, whether applying it counts for step 1b)."""

_STEP_1B: Sequence[Rule] = (
    (b"eed", _m_gt0, b"ee", False),
    (b"ed", _has_vowel, b"", True),
    (b"ing", _has_vowel, b"", True),
)
_STEP_1B2: Sequence[Rule] = (
    (b"at", None, b"ate", True),
    (b"bl", None, b"ble", True),
    (b"iz", None, b"ize", True),
)
_STEP_2: Sequence[Rule] = (
    (b"ational", _m_gt0, b"ate", False),
    (b"tional", _m_gt0, b"tion", False),
    (b"enci", _m_gt0, b"ence", False),
    (b"anci", _m_gt0, b"ance", False),
    (b"izer", _m_gt0, b"ize", False),
    (b"logi", _m_gt0, b"log", False),
    (b"bli", _m_gt0, b"ble", False),
    (b"alli", _m_gt0, b"al", False),
    (b"entli", _m_gt0, b"ent", False),
    (b"eli", _m_gt0, b"e", False),
    (b"ousli", _m_gt0, b"ous", False),
    (b"ization", _m_gt0, b"ize", False),
    (b"ation", _m_gt0, b"ate", False),
    (b"ator", _m_gt0, b"ate", False),
    (b"alism", _m_gt0, b"al", False),
    (b"iveness", _m_gt0, b"ive", False),
    (b"fulness", _m_gt0, b"ful", False),
    (b"ousness", _m_gt0, b"ous", False),
    (b"aliti", _m_gt0, b"al", False),
    (b"iviti", _m_gt0, b"ive", False),
    (b"biliti", _m_gt0, b"ble", False),
)
_STEP_3: Sequence[Rule] = (
    (b"ical", _m_gt0, b"ic", False),
    (b"ness", _m_gt0, b"", False),
    (b"icate", _m_gt0, b"ic", False),
    (b"iciti", _m_gt0, b"ic", False),
    (b"ful", _m_gt0, b"", False),
    (b"ative", _m_gt0, b"", False),
    (b"alize", _m_gt0, b"al", False),
)
_STEP_4: Sequence[Rule] = (
    (b"al", _m_gt1, b"", False),
    (b"ance", _m_gt1, b"", False),
    (b"ence", _m_gt1, b"", False),
    (b"er", _m_gt1, b"", False),
    (b"ic", _m_gt1, b"", False),
    (b"able", _m_gt1, b"", False),
    (b"ible", _m_gt1, b"", False),
    (b"ant", _m_gt1, b"", False),
    (b"ement", _m_gt1, b"", False),
    (b"ment", _m_gt1, b"", False),
    (b"ent", _m_gt1, b"", False),
    (b"ion", _m_gt1_s_or_t, b"", False),
    (b"ou", _m_gt1, b"", False),
    (b"ism", _m_gt1, b"", False),
    (b"ate", _m_gt1, b"", False),
    (b"iti", _m_gt1, b"", False),
    (b"ous", _m_gt1, b"", False),
    (b"ive", _m_gt1, b"", False),
    (b"ize", _m_gt1, b"", False),
)


def _apply(word: bytes, rules: Sequence[Rule]) -> tuple[bytes, bool]:
    """Rule 2: the first rule whose suffix ends the (longer) word is the only one tried."""
    for suffix, condition, replacement, counts in rules:
        if len(word) > len(suffix) and word.endswith(suffix):
            stem = word[: -len(suffix)]
            if condition is None or condition(stem):
                return stem + replacement, counts
            return word, False
    return word, False


def _step_1a(word: bytes) -> bytes:
    if not word.endswith(b"s"):
        return word
    if word[-2:-1] == b"e":
        if (len(word) > 4 and word[-4:-2] == b"ss") or (len(word) > 3 and word[-3:-2] == b"i"):
            return word[:-2]
        return word[:-1]
    if word[-2:-1] != b"s":
        return word[:-1]
    return word


def _stem_bytes(word: bytes) -> bytes:
    word = _step_1a(word)
    word, stripped = _apply(word, _STEP_1B)
    if stripped:
        word, restored = _apply(word, _STEP_1B2)
        if not restored:
            last = word[-1]
            if not _vowel(last, False) and last not in b"lsz" and word[-2:-1] == bytes([last]):
                word = word[:-1]
            elif _m_eq1(word) and _o_star(word):
                word += b"e"
    if word.endswith(b"y") and _has_vowel(word[:-1]):
        word = word[:-1] + b"i"
    for step in (_STEP_2, _STEP_3, _STEP_4):
        word, _ = _apply(word, step)
    if word.endswith(b"e") and (_m_gt1(word[:-1]) or (_m_eq1(word[:-1]) and not _o_star(word[:-1]))):
        word = word[:-1]
    if len(word) > 1 and word.endswith(b"ll") and _m_gt1(word[:-1]):
        word = word[:-1]
    return word


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """The FTS5 porter stem of one `unicode61` token (already folded: `derived.fold_words`)."""
    raw = token.encode()
    if not 3 <= len(raw) <= _MAX_TOKEN:
        return token
    return _stem_bytes(raw).decode("utf-8", errors="surrogateescape")
