"""`notes.stemming` stems every word as SQLite's FTS5 `porter` tokenizer does (its Rule 2): compared
with FTS5 itself, through an `fts5vocab` table, on every word of the relevance vault, the test vault
and the docs, and on the Porter paper's examples."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from notewarden.notes.derived import fold_words
from notewarden.notes.stemming import stem
from tests.vault_cases import VAULT

ROOT = Path(__file__).resolve().parents[2]
PORTER_EXAMPLES = (
    "caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized "
    "hopping tanned falling hissing fizzed failing filing happy sky relational conditional rational valenci "
    "hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization predication "
    "operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti triplicate "
    "formative formalize electriciti electrical hopeful goodness revival allowance inference airliner "
    "gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou communism "
    "activate angulariti homologous effective bowdlerize probate rate cease controll roll generously ies sses "
    "yyyy shared sharing cssclasses crème brûlée naïveté"
)


def words() -> list[str]:
    texts = [PORTER_EXAMPLES, *VAULT.values()]
    texts += [p.read_text(encoding="utf-8") for p in (ROOT / "bench" / "relevance" / "vault").rglob("*.md")]
    texts += [p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")]
    return sorted({w for text in texts for w in fold_words(text)})


def test_every_word_is_stemmed_as_fts5_porter_stems_it() -> None:
    every = words()
    assert len(every) > 3000
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
    db.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)", list(enumerate(every)))
    fts5 = {every[doc]: term for doc, term in db.execute("SELECT doc, term FROM v")}
    differ = {w: (fts5[w], stem(w)) for w in every if fts5[w] != stem(w)}
    assert not differ, differ
    assert stem("sharing") == stem("shared") == "share" and stem("cssclasses") == "cssclass"
