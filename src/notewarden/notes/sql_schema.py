"""The SQL note store's schema, both dialects, one step per change (`notewarden.schema` Rule 1).

Step 1 (the seed): `notes` and `notes_trash`, and the version trigger that bumps `notes.version`
on every change of a row's workspace, path or body, whoever writes it.

Step 2 (search in the database): the derived columns (`notes.derived`: title, title keys and
their short grams, front matter, tags; on PostgreSQL the weighted `tsvector`), with
`derived_version` telling whether they are current, and their indexes:

| what a query asks              | PostgreSQL                                   | SQLite                                  |
|--------------------------------|----------------------------------------------|-----------------------------------------|
| a workspace's notes by id      | `notes_workspace_path_key` (path `COLLATE "C"`) | `UNIQUE (workspace, path)`           |
| words in title, path, body     | GIN on `search` (tsvector)                   | FTS5 `notes_fts` (external content)     |
| title words of 3+ characters   | GIN `gin_trgm_ops` on `title_keys`           | FTS5 trigram `notes_title_fts`          |
| title words all shorter        | GIN on `title_grams` (text[])                | FTS5 `notes_gram_fts` (hex tokens)      |
| rows another program wrote     | partial index `notes_stale` on the generated `stale` | partial index `notes_stale`     |
| changed since / before         | `notes_by_modified (workspace, modified_ns)` | the same                                |
| tags, front-matter properties  | step 3's tables (below); step 2's GIN indexes on `tags` and `front_matter` are dropped | the same tables |

The SQLite full-text tables read their text from `notes` (`content='notes'`) and are kept by
triggers on `notes`, so they follow every writer; only the derived columns wait for notewarden
(`notes.derived` Rule 1). PostgreSQL's `path` is compared byte by byte (`COLLATE "C"`): ids sort
as the files store sorts them, and a folder is a range of ids whatever the database's locale.
A GIN index keeps new entries in a pending list that every query reads in full until it is
merged (at 4 MB by default, some 10,000 notes: docs/performance.md, "The PostgreSQL store");
the limit here is 256 kB,
and `notewarden import` merges the lists when it is done. PostgreSQL's planner cannot estimate `derived_version IS DISTINCT FROM version` (two columns), so
it reads it from the stored column `stale`, whose statistics say how rare it is. Step 2 needs the
`pg_trgm` extension (trusted: the database owner running `db upgrade` may
create it).

Step 3 (what notes know, issue 14; `notes.sql` Rule 4): on `notes` the link keys (`name_key`,
`path_key`), `property_error` and the latest change (`last_change`: created by default, set to
modified or moved, with `previous`, by the version trigger whoever writes); tables, each row keyed
by its note's row id (`note_row`) and removed with it by the trigger `notes_forget_facts`, whoever
deletes:

| table              | what                                                  | indexed for                            |
|--------------------|-------------------------------------------------------|----------------------------------------|
| `note_tags`        | folded tags, as written (`name`), and the parents of nested ones (`name` NULL) | a tag's notes (all/any, nested) |
| `tag_counts`       | notes per tag, kept by triggers on `note_tags`        | `notes_tags` in O(tags shown)          |
| `note_aliases`     | folded aliases                                        | resolving `[[Alias]]`                   |
| `note_properties`  | each front-matter value (each item of a list): text or number | equals / in / before / after    |
| `note_links`       | each link as written, its line of context, name key, resolved `target_row` and how, and its note's id (`source`) | backlinks in order (`target_row, source`); the links a name can reach |
| `links_dirty`      | name keys whose links must be resolved again (`note_row` 0: every link with it; else that note's) | |
| `notes_gone`       | a note deleted (by anyone), for `GONE_KEPT_DAYS`      | `notes_recent`                          |

Every row is derived again (`derived_version = NULL`), so an upgraded database fills the tables
before its next query. Keys compare byte by byte on PostgreSQL (`COLLATE "C"`), so prefix ranges
mean what they mean in SQLite.

Step 4 (issue 25: the same answers on every store, and what notes mean):
* words are Porter-stemmed everywhere (`notes.stemming`): SQLite's `notes_fts` is rebuilt with the
  `porter` tokenizer; PostgreSQL's rows are derived again (`derived_version = NULL`), whose
  `search` vectors now hold stems;
* `notes_by_time (workspace, modified_ns DESC, path)` replaces `notes_by_modified`: the order of a
  filters-only search and of `notes_recent` (newest first, ties by id), so both walk it and stop at
  the page's end (`notes.sql` Rule 6);
* `note_vectors`: a note's sections' vectors (`notes.vectors`), one row per chunk with its section,
  the digest of the text it was computed from (an unchanged section keeps its vector) and `seq`,
  which only grows, so a process holding the vectors in memory reads only the rows after the last
  it saw; removed with their note by `notes_forget_facts`. `embedded_version` says which version
  of the note they describe (PostgreSQL: the generated `unembedded`, for the planner, as `stale`);
  `vector_models` which model computed a workspace's vectors (another model: all computed again).

Step 5 (issue 29: a large note's indexing waits for the next query, `notes.sql` Rule 3):
* SQLite: `notes_indexed_later (note_row, title, path, body)` holds, for a row whose full-text
  entry waits, the values that entry was made from; `notes_fts` always holds, for each row, the
  values of its `notes_indexed_later` row if it has one, else its own. The triggers keep that true
  whoever writes: an update of a row that has one leaves `notes_fts` alone (an update that changes
  none of title, path and body too: nothing to re-tokenize), a delete of the note removes the entry
  made from the kept values, and deleting the kept row (a trigger) removes that entry and indexes
  the note as it is now. FTS5's 'delete' must be given the exact values it indexed (SQLite 3.40 has
  no `contentless_delete`), so they are kept, once, when the first large write leaves the row behind.
  While a row waits, `notes_fts`'s `integrity-check` against the content fails for it, by design.
* SQLite: the version trigger skips its second write of the row when the statement already set
  what it would (version + 1, the database's clock, `last_change`, `previous`), as a large write does:
  that second write would copy the whole body again. Any other writer gets the trigger as before.
* PostgreSQL: nothing changes (its `search` vector is a derived column, behind with the others
  while the row is stale, and its version trigger runs before the write); the step only says so on
  the column.
"""

from __future__ import annotations

from notewarden.schema import SchemaComponent

__all__ = ["NOW_NS", "SQL_STORE_SCHEMA"]

_SQLITE_SEED = """
        CREATE TABLE notes (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            workspace   TEXT NOT NULL,
            path        TEXT NOT NULL,
            body        TEXT NOT NULL,
            version     INTEGER NOT NULL DEFAULT 1,
            modified_ns INTEGER NOT NULL,
            UNIQUE (workspace, path)
        );
        CREATE TRIGGER notes_new_version AFTER UPDATE OF workspace, path, body ON notes
        BEGIN
            UPDATE notes SET version = OLD.version + 1,
                modified_ns = CAST((julianday('now') - 2440587.5) * 86400000000000 AS INTEGER)
            WHERE id = NEW.id;
        END;
        CREATE TABLE notes_trash (
            trash_id        TEXT PRIMARY KEY,
            workspace       TEXT NOT NULL,
            path            TEXT NOT NULL,
            title           TEXT NOT NULL,
            body            TEXT NOT NULL,
            note_row        INTEGER NOT NULL,
            version         INTEGER NOT NULL,
            modified_ns     INTEGER NOT NULL,
            principal       TEXT NOT NULL,
            confirmation_id TEXT NOT NULL,
            deleted_at      REAL NOT NULL
        );
        CREATE INDEX notes_trash_by_workspace ON notes_trash (workspace, deleted_at);
        """

_POSTGRES_SEED = """
        CREATE TABLE notes (
            id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            workspace   text NOT NULL,
            path        text NOT NULL,
            body        text NOT NULL,
            version     bigint NOT NULL DEFAULT 1,
            modified_ns bigint NOT NULL,
            CONSTRAINT notes_workspace_path_key UNIQUE (workspace, path)
        );
        CREATE FUNCTION notes_new_version() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.version := OLD.version + 1;
            NEW.modified_ns := (extract(epoch FROM clock_timestamp()) * 1000000000)::bigint;
            RETURN NEW;
        END $$;
        CREATE TRIGGER notes_new_version BEFORE UPDATE OF workspace, path, body ON notes
            FOR EACH ROW EXECUTE FUNCTION notes_new_version();
        CREATE TABLE notes_trash (
            trash_id        text PRIMARY KEY,
            workspace       text NOT NULL,
            path            text NOT NULL,
            title           text NOT NULL,
            body            text NOT NULL,
            note_row        bigint NOT NULL,
            version         bigint NOT NULL,
            modified_ns     bigint NOT NULL,
            principal       text NOT NULL,
            confirmation_id text NOT NULL,
            deleted_at      double precision NOT NULL
        );
        CREATE INDEX notes_trash_by_workspace ON notes_trash (workspace, deleted_at);
        """

_SQLITE_SEARCH = """
    ALTER TABLE notes ADD COLUMN title TEXT;
    ALTER TABLE notes ADD COLUMN title_keys TEXT;
    ALTER TABLE notes ADD COLUMN title_grams TEXT;
    ALTER TABLE notes ADD COLUMN front_matter TEXT;
    ALTER TABLE notes ADD COLUMN tags TEXT;
    ALTER TABLE notes ADD COLUMN derived_version INTEGER;
    CREATE INDEX notes_stale ON notes (workspace) WHERE derived_version IS NOT version;
    CREATE INDEX notes_by_modified ON notes (workspace, modified_ns);
    CREATE VIRTUAL TABLE notes_fts USING fts5(
        title, path, body, content = 'notes', content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE VIRTUAL TABLE notes_title_fts USING fts5(
        title_keys, content = 'notes', content_rowid = 'id', tokenize = 'trigram'
    );
    CREATE VIRTUAL TABLE notes_gram_fts USING fts5(
        title_grams, content = 'notes', content_rowid = 'id', tokenize = 'ascii'
    );
    CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN
        INSERT INTO notes_fts (rowid, title, path, body) VALUES (NEW.id, NEW.title, NEW.path, NEW.body);
        INSERT INTO notes_title_fts (rowid, title_keys) VALUES (NEW.id, NEW.title_keys);
        INSERT INTO notes_gram_fts (rowid, title_grams) VALUES (NEW.id, NEW.title_grams);
    END;
    CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, title, path, body)
            VALUES ('delete', OLD.id, OLD.title, OLD.path, OLD.body);
        INSERT INTO notes_title_fts (notes_title_fts, rowid, title_keys)
            VALUES ('delete', OLD.id, OLD.title_keys);
        INSERT INTO notes_gram_fts (notes_gram_fts, rowid, title_grams)
            VALUES ('delete', OLD.id, OLD.title_grams);
    END;
    CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, path, body ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, title, path, body)
            VALUES ('delete', OLD.id, OLD.title, OLD.path, OLD.body);
        INSERT INTO notes_fts (rowid, title, path, body) VALUES (NEW.id, NEW.title, NEW.path, NEW.body);
    END;
    CREATE TRIGGER notes_title_fts_update AFTER UPDATE OF title_keys ON notes BEGIN
        INSERT INTO notes_title_fts (notes_title_fts, rowid, title_keys)
            VALUES ('delete', OLD.id, OLD.title_keys);
        INSERT INTO notes_title_fts (rowid, title_keys) VALUES (NEW.id, NEW.title_keys);
    END;
    CREATE TRIGGER notes_gram_fts_update AFTER UPDATE OF title_grams ON notes BEGIN
        INSERT INTO notes_gram_fts (notes_gram_fts, rowid, title_grams)
            VALUES ('delete', OLD.id, OLD.title_grams);
        INSERT INTO notes_gram_fts (rowid, title_grams) VALUES (NEW.id, NEW.title_grams);
    END;
    INSERT INTO notes_fts (notes_fts) VALUES ('rebuild');
    INSERT INTO notes_title_fts (notes_title_fts) VALUES ('rebuild');
    INSERT INTO notes_gram_fts (notes_gram_fts) VALUES ('rebuild');
"""

_POSTGRES_SEARCH = """
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
    DROP TRIGGER notes_new_version ON notes;
    ALTER TABLE notes
        ALTER COLUMN path TYPE text COLLATE "C",
        ADD COLUMN title text,
        ADD COLUMN title_keys text,
        ADD COLUMN title_grams text[],
        ADD COLUMN search tsvector,
        ADD COLUMN front_matter jsonb,
        ADD COLUMN tags text[],
        ADD COLUMN derived_version bigint,
        ADD COLUMN stale boolean GENERATED ALWAYS AS (derived_version IS DISTINCT FROM version) STORED;
    CREATE TRIGGER notes_new_version BEFORE UPDATE OF workspace, path, body ON notes
        FOR EACH ROW EXECUTE FUNCTION notes_new_version();
    ALTER TABLE notes_trash ALTER COLUMN path TYPE text COLLATE "C";
    CREATE INDEX notes_stale ON notes (workspace) WHERE stale;
    CREATE INDEX notes_by_modified ON notes (workspace, modified_ns);
    CREATE INDEX notes_search ON notes USING gin (search) WITH (gin_pending_list_limit = 256);
    CREATE INDEX notes_title_trigrams ON notes USING gin (title_keys gin_trgm_ops) WITH (gin_pending_list_limit = 256);
    CREATE INDEX notes_title_grams ON notes USING gin (title_grams) WITH (gin_pending_list_limit = 256);
    CREATE INDEX notes_by_tag ON notes USING gin (tags) WITH (gin_pending_list_limit = 256);
    CREATE INDEX notes_front_matter ON notes USING gin (front_matter jsonb_path_ops) WITH (gin_pending_list_limit = 256);
"""

NOW_NS = {
    "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000000000 AS INTEGER)",
    "postgres": "(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint",
}
"""The database's clock in nanoseconds, as the version trigger stamps `modified_ns`."""
GONE_KEPT_DAYS = 90
"""How long `notes_gone` remembers a note that went (`recent`)."""

_SQLITE_KNOWLEDGE = f"""
    ALTER TABLE notes DROP COLUMN tags;
    ALTER TABLE notes ADD COLUMN name_key TEXT;
    ALTER TABLE notes ADD COLUMN path_key TEXT;
    ALTER TABLE notes ADD COLUMN property_error TEXT;
    ALTER TABLE notes ADD COLUMN last_change TEXT DEFAULT 'created';
    ALTER TABLE notes ADD COLUMN previous TEXT;
    UPDATE notes SET last_change = 'modified', derived_version = NULL;
    CREATE INDEX notes_by_name_key ON notes (workspace, name_key, path_key);
    DROP TRIGGER notes_new_version;
    CREATE TRIGGER notes_new_version AFTER UPDATE OF workspace, path, body ON notes
    BEGIN
        UPDATE notes SET version = OLD.version + 1, modified_ns = {NOW_NS["sqlite"]},
            last_change = CASE WHEN NEW.path IS OLD.path THEN 'modified' ELSE 'moved' END,
            previous = CASE WHEN NEW.path IS OLD.path THEN NULL ELSE OLD.path END
        WHERE id = NEW.id;
    END;
    CREATE TABLE note_tags (
        note_row INTEGER NOT NULL, workspace TEXT NOT NULL, tag TEXT NOT NULL, name TEXT,
        PRIMARY KEY (note_row, tag)
    ) WITHOUT ROWID;
    CREATE INDEX note_tags_by_tag ON note_tags (workspace, tag, note_row);
    CREATE TABLE tag_counts (
        workspace TEXT NOT NULL, tag TEXT NOT NULL, name TEXT NOT NULL, notes INTEGER NOT NULL,
        PRIMARY KEY (workspace, tag)
    ) WITHOUT ROWID;
    CREATE TRIGGER note_tags_counted AFTER INSERT ON note_tags WHEN NEW.name IS NOT NULL BEGIN
        INSERT INTO tag_counts (workspace, tag, name, notes) VALUES (NEW.workspace, NEW.tag, NEW.name, 1)
            ON CONFLICT (workspace, tag) DO UPDATE SET notes = notes + 1, name = min(name, excluded.name);
    END;
    CREATE TRIGGER note_tags_uncounted AFTER DELETE ON note_tags WHEN OLD.name IS NOT NULL BEGIN
        UPDATE tag_counts SET notes = notes - 1 WHERE workspace = OLD.workspace AND tag = OLD.tag;
        DELETE FROM tag_counts WHERE workspace = OLD.workspace AND tag = OLD.tag AND notes <= 0;
    END;
    CREATE TABLE note_aliases (
        note_row INTEGER NOT NULL, workspace TEXT NOT NULL, alias_key TEXT NOT NULL,
        PRIMARY KEY (note_row, alias_key)
    ) WITHOUT ROWID;
    CREATE INDEX note_aliases_by_key ON note_aliases (workspace, alias_key);
    CREATE TABLE note_properties (
        note_row INTEGER NOT NULL, workspace TEXT NOT NULL, name TEXT NOT NULL, value_text TEXT, value_num REAL
    );
    CREATE INDEX note_properties_by_note ON note_properties (note_row);
    CREATE INDEX note_properties_by_text ON note_properties (workspace, name, value_text);
    CREATE INDEX note_properties_by_number ON note_properties (workspace, name, value_num);
    CREATE TABLE note_links (
        note_row INTEGER NOT NULL, seq INTEGER NOT NULL, workspace TEXT NOT NULL, line INTEGER NOT NULL,
        style TEXT NOT NULL, embed INTEGER NOT NULL, path TEXT NOT NULL, anchor TEXT NOT NULL,
        written TEXT NOT NULL, context TEXT NOT NULL, name_key TEXT NOT NULL, target_row INTEGER, via TEXT,
        source TEXT NOT NULL, PRIMARY KEY (note_row, seq)
    ) WITHOUT ROWID;
    CREATE INDEX note_links_by_target ON note_links (target_row, source, seq);
    CREATE INDEX note_links_by_name ON note_links (workspace, name_key);
    CREATE TABLE links_dirty (
        workspace TEXT NOT NULL, name_key TEXT NOT NULL, note_row INTEGER NOT NULL,
        PRIMARY KEY (workspace, name_key, note_row)
    ) WITHOUT ROWID;
    CREATE TABLE notes_gone (
        workspace TEXT NOT NULL, path TEXT NOT NULL, title TEXT NOT NULL, gone_ns INTEGER NOT NULL,
        PRIMARY KEY (workspace, path)
    ) WITHOUT ROWID;
    CREATE INDEX notes_gone_by_time ON notes_gone (workspace, gone_ns);
    CREATE TRIGGER notes_forget_facts AFTER DELETE ON notes BEGIN
        INSERT OR IGNORE INTO links_dirty (workspace, name_key, note_row)
            SELECT OLD.workspace, OLD.name_key, 0 WHERE OLD.name_key IS NOT NULL
            UNION SELECT workspace, alias_key, 0 FROM note_aliases WHERE note_row = OLD.id;
        DELETE FROM note_tags WHERE note_row = OLD.id;
        DELETE FROM note_aliases WHERE note_row = OLD.id;
        DELETE FROM note_links WHERE note_row = OLD.id;
        DELETE FROM note_properties WHERE note_row = OLD.id;
        INSERT OR REPLACE INTO notes_gone (workspace, path, title, gone_ns)
            VALUES (OLD.workspace, OLD.path, coalesce(OLD.title, OLD.path), {NOW_NS["sqlite"]});
        DELETE FROM notes_gone WHERE workspace = OLD.workspace
            AND gone_ns < {NOW_NS["sqlite"]} - {GONE_KEPT_DAYS} * 86400000000000;
    END;
    CREATE TRIGGER notes_back AFTER INSERT ON notes BEGIN
        DELETE FROM notes_gone WHERE workspace = NEW.workspace AND path = NEW.path;
    END;
"""

_POSTGRES_KNOWLEDGE = f"""
    DROP INDEX notes_by_tag;
    DROP INDEX notes_front_matter;
    ALTER TABLE notes
        DROP COLUMN tags,
        ADD COLUMN name_key text COLLATE "C",
        ADD COLUMN path_key text COLLATE "C",
        ADD COLUMN property_error text,
        ADD COLUMN last_change text DEFAULT 'created',
        ADD COLUMN previous text;
    UPDATE notes SET last_change = 'modified', derived_version = NULL;
    CREATE INDEX notes_by_name_key ON notes (workspace, name_key, path_key);
    CREATE OR REPLACE FUNCTION notes_new_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.version := OLD.version + 1;
        NEW.modified_ns := {NOW_NS["postgres"]};
        IF NEW.path IS DISTINCT FROM OLD.path THEN
            NEW.last_change := 'moved';
            NEW.previous := OLD.path;
        ELSE
            NEW.last_change := 'modified';
            NEW.previous := NULL;
        END IF;
        RETURN NEW;
    END $$;
    CREATE TABLE note_tags (
        note_row bigint NOT NULL, workspace text NOT NULL, tag text COLLATE "C" NOT NULL,
        name text COLLATE "C", PRIMARY KEY (note_row, tag)
    );
    CREATE INDEX note_tags_by_tag ON note_tags (workspace, tag, note_row);
    CREATE TABLE tag_counts (
        workspace text NOT NULL, tag text COLLATE "C" NOT NULL, name text COLLATE "C" NOT NULL,
        notes bigint NOT NULL, PRIMARY KEY (workspace, tag)
    );
    CREATE FUNCTION note_tags_counted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF current_setting('notewarden.tags_counted_later', true) = 'on' THEN
            RETURN NULL;  -- a bulk insert counts its rows' tags once (notes.sql add_rows)
        END IF;
        IF TG_OP = 'INSERT' THEN
            INSERT INTO tag_counts (workspace, tag, name, notes) VALUES (NEW.workspace, NEW.tag, NEW.name, 1)
                ON CONFLICT (workspace, tag) DO UPDATE
                SET notes = tag_counts.notes + 1, name = least(tag_counts.name, excluded.name);
            RETURN NEW;
        END IF;
        UPDATE tag_counts SET notes = notes - 1 WHERE workspace = OLD.workspace AND tag = OLD.tag;
        DELETE FROM tag_counts WHERE workspace = OLD.workspace AND tag = OLD.tag AND notes <= 0;
        RETURN OLD;
    END $$;
    CREATE TRIGGER note_tags_counted AFTER INSERT ON note_tags FOR EACH ROW WHEN (NEW.name IS NOT NULL)
        EXECUTE FUNCTION note_tags_counted();
    CREATE TRIGGER note_tags_uncounted AFTER DELETE ON note_tags FOR EACH ROW WHEN (OLD.name IS NOT NULL)
        EXECUTE FUNCTION note_tags_counted();
    CREATE TABLE note_aliases (
        note_row bigint NOT NULL, workspace text NOT NULL, alias_key text COLLATE "C" NOT NULL,
        PRIMARY KEY (note_row, alias_key)
    );
    CREATE INDEX note_aliases_by_key ON note_aliases (workspace, alias_key);
    CREATE TABLE note_properties (
        note_row bigint NOT NULL, workspace text NOT NULL, name text NOT NULL, value_text text COLLATE "C",
        value_num double precision
    );
    CREATE INDEX note_properties_by_note ON note_properties (note_row);
    CREATE INDEX note_properties_by_text ON note_properties (workspace, name, value_text);
    CREATE INDEX note_properties_by_number ON note_properties (workspace, name, value_num);
    CREATE TABLE note_links (
        note_row bigint NOT NULL, seq integer NOT NULL, workspace text NOT NULL, line integer NOT NULL,
        style text NOT NULL, embed boolean NOT NULL, path text NOT NULL, anchor text NOT NULL,
        written text NOT NULL, context text NOT NULL, name_key text COLLATE "C" NOT NULL, target_row bigint,
        via text, source text COLLATE "C" NOT NULL, PRIMARY KEY (note_row, seq)
    );
    CREATE INDEX note_links_by_target ON note_links (target_row, source, seq);
    CREATE INDEX note_links_by_name ON note_links (workspace, name_key);
    CREATE TABLE links_dirty (
        workspace text NOT NULL, name_key text COLLATE "C" NOT NULL, note_row bigint NOT NULL,
        PRIMARY KEY (workspace, name_key, note_row)
    );
    CREATE TABLE notes_gone (
        workspace text NOT NULL, path text COLLATE "C" NOT NULL, title text NOT NULL, gone_ns bigint NOT NULL,
        PRIMARY KEY (workspace, path)
    );
    CREATE INDEX notes_gone_by_time ON notes_gone (workspace, gone_ns);
    CREATE FUNCTION notes_forget_facts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO links_dirty (workspace, name_key, note_row)
            SELECT OLD.workspace, OLD.name_key, 0 WHERE OLD.name_key IS NOT NULL
            UNION SELECT workspace, alias_key, 0 FROM note_aliases WHERE note_row = OLD.id
            ON CONFLICT DO NOTHING;
        DELETE FROM note_tags WHERE note_row = OLD.id;
        DELETE FROM note_aliases WHERE note_row = OLD.id;
        DELETE FROM note_links WHERE note_row = OLD.id;
        DELETE FROM note_properties WHERE note_row = OLD.id;
        INSERT INTO notes_gone (workspace, path, title, gone_ns)
            VALUES (OLD.workspace, OLD.path, coalesce(OLD.title, OLD.path), {NOW_NS["postgres"]})
            ON CONFLICT (workspace, path) DO UPDATE SET title = excluded.title, gone_ns = excluded.gone_ns;
        DELETE FROM notes_gone WHERE workspace = OLD.workspace
            AND gone_ns < {NOW_NS["postgres"]} - {GONE_KEPT_DAYS}::bigint * 86400000000000;
        RETURN OLD;
    END $$;
    CREATE TRIGGER notes_forget_facts AFTER DELETE ON notes FOR EACH ROW EXECUTE FUNCTION notes_forget_facts();
    CREATE FUNCTION notes_back() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        DELETE FROM notes_gone WHERE workspace = NEW.workspace AND path = NEW.path;
        RETURN NEW;
    END $$;
    CREATE TRIGGER notes_back AFTER INSERT ON notes FOR EACH ROW EXECUTE FUNCTION notes_back();
"""

_SQLITE_FORGET_FACTS = f"""
    CREATE TRIGGER notes_forget_facts AFTER DELETE ON notes BEGIN
        INSERT OR IGNORE INTO links_dirty (workspace, name_key, note_row)
            SELECT OLD.workspace, OLD.name_key, 0 WHERE OLD.name_key IS NOT NULL
            UNION SELECT workspace, alias_key, 0 FROM note_aliases WHERE note_row = OLD.id;
        DELETE FROM note_tags WHERE note_row = OLD.id;
        DELETE FROM note_aliases WHERE note_row = OLD.id;
        DELETE FROM note_links WHERE note_row = OLD.id;
        DELETE FROM note_properties WHERE note_row = OLD.id;
        DELETE FROM note_vectors WHERE note_row = OLD.id;
        INSERT OR REPLACE INTO notes_gone (workspace, path, title, gone_ns)
            VALUES (OLD.workspace, OLD.path, coalesce(OLD.title, OLD.path), {NOW_NS["sqlite"]});
        DELETE FROM notes_gone WHERE workspace = OLD.workspace
            AND gone_ns < {NOW_NS["sqlite"]} - {GONE_KEPT_DAYS} * 86400000000000;
    END;
"""

_SQLITE_MEANING = f"""
    DROP TABLE notes_fts;
    CREATE VIRTUAL TABLE notes_fts USING fts5(
        title, path, body, content = 'notes', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    );
    INSERT INTO notes_fts (notes_fts) VALUES ('rebuild');
    DROP INDEX notes_by_modified;
    CREATE INDEX notes_by_time ON notes (workspace, modified_ns DESC, path);
    ALTER TABLE notes ADD COLUMN embedded_version INTEGER;
    CREATE INDEX notes_unembedded ON notes (workspace) WHERE embedded_version IS NOT version;
    CREATE TABLE note_vectors (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, note_row INTEGER NOT NULL, workspace TEXT NOT NULL,
        chunk INTEGER NOT NULL, section TEXT NOT NULL, digest TEXT NOT NULL, vector BLOB NOT NULL
    );
    CREATE INDEX note_vectors_by_note ON note_vectors (note_row);
    CREATE INDEX note_vectors_by_seq ON note_vectors (workspace, seq);
    CREATE TABLE vector_models (workspace TEXT PRIMARY KEY, model TEXT NOT NULL) WITHOUT ROWID;
    DROP TRIGGER notes_forget_facts;
    {_SQLITE_FORGET_FACTS}
"""

_POSTGRES_MEANING = f"""
    UPDATE notes SET derived_version = NULL;
    DROP INDEX notes_by_modified;
    CREATE INDEX notes_by_time ON notes (workspace, modified_ns DESC, path);
    ALTER TABLE notes
        ADD COLUMN embedded_version bigint,
        ADD COLUMN unembedded boolean GENERATED ALWAYS AS (embedded_version IS DISTINCT FROM version) STORED;
    CREATE INDEX notes_unembedded ON notes (workspace) WHERE unembedded;
    CREATE TABLE note_vectors (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, note_row bigint NOT NULL, workspace text NOT NULL,
        chunk integer NOT NULL, section text NOT NULL, digest text NOT NULL, vector bytea NOT NULL
    );
    CREATE INDEX note_vectors_by_note ON note_vectors (note_row);
    CREATE INDEX note_vectors_by_seq ON note_vectors (workspace, seq);
    CREATE TABLE vector_models (workspace text PRIMARY KEY, model text NOT NULL);
    CREATE OR REPLACE FUNCTION notes_forget_facts() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO links_dirty (workspace, name_key, note_row)
            SELECT OLD.workspace, OLD.name_key, 0 WHERE OLD.name_key IS NOT NULL
            UNION SELECT workspace, alias_key, 0 FROM note_aliases WHERE note_row = OLD.id
            ON CONFLICT DO NOTHING;
        DELETE FROM note_tags WHERE note_row = OLD.id;
        DELETE FROM note_aliases WHERE note_row = OLD.id;
        DELETE FROM note_links WHERE note_row = OLD.id;
        DELETE FROM note_properties WHERE note_row = OLD.id;
        DELETE FROM note_vectors WHERE note_row = OLD.id;
        INSERT INTO notes_gone (workspace, path, title, gone_ns)
            VALUES (OLD.workspace, OLD.path, coalesce(OLD.title, OLD.path), {NOW_NS["postgres"]})
            ON CONFLICT (workspace, path) DO UPDATE SET title = excluded.title, gone_ns = excluded.gone_ns;
        DELETE FROM notes_gone WHERE workspace = OLD.workspace
            AND gone_ns < {NOW_NS["postgres"]} - {GONE_KEPT_DAYS}::bigint * 86400000000000;
        RETURN OLD;
    END $$;
"""

_SQLITE_INDEXED_LATER = f"""
    DROP TRIGGER notes_new_version;
    CREATE TRIGGER notes_new_version AFTER UPDATE OF workspace, path, body ON notes
    WHEN NOT (NEW.version IS OLD.version + 1 AND NEW.modified_ns IS {NOW_NS["sqlite"]}
        AND NEW.last_change IS CASE WHEN NEW.path IS OLD.path THEN 'modified' ELSE 'moved' END
        AND NEW.previous IS CASE WHEN NEW.path IS OLD.path THEN NULL ELSE OLD.path END)
    BEGIN
        UPDATE notes SET version = OLD.version + 1, modified_ns = {NOW_NS["sqlite"]},
            last_change = CASE WHEN NEW.path IS OLD.path THEN 'modified' ELSE 'moved' END,
            previous = CASE WHEN NEW.path IS OLD.path THEN NULL ELSE OLD.path END
        WHERE id = NEW.id;
    END;
    CREATE TABLE notes_indexed_later (
        note_row INTEGER PRIMARY KEY, title TEXT, path TEXT NOT NULL, body TEXT NOT NULL
    );
    CREATE TRIGGER notes_indexed_now AFTER DELETE ON notes_indexed_later BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, title, path, body)
            VALUES ('delete', OLD.note_row, OLD.title, OLD.path, OLD.body);
        INSERT INTO notes_fts (rowid, title, path, body)
            SELECT id, title, path, body FROM notes WHERE id = OLD.note_row;
    END;
    DROP TRIGGER notes_fts_delete;
    CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, title, path, body)
            SELECT 'delete', OLD.id, OLD.title, OLD.path, OLD.body
            WHERE NOT EXISTS (SELECT 1 FROM notes_indexed_later WHERE note_row = OLD.id);
        DELETE FROM notes_indexed_later WHERE note_row = OLD.id;
        INSERT INTO notes_title_fts (notes_title_fts, rowid, title_keys)
            VALUES ('delete', OLD.id, OLD.title_keys);
        INSERT INTO notes_gram_fts (notes_gram_fts, rowid, title_grams)
            VALUES ('delete', OLD.id, OLD.title_grams);
    END;
    DROP TRIGGER notes_fts_update;
    CREATE TRIGGER notes_fts_update AFTER UPDATE OF title, path, body ON notes
    WHEN (NEW.title IS NOT OLD.title OR NEW.path IS NOT OLD.path OR NEW.body IS NOT OLD.body)
        AND NOT EXISTS (SELECT 1 FROM notes_indexed_later WHERE note_row = NEW.id)
    BEGIN
        INSERT INTO notes_fts (notes_fts, rowid, title, path, body)
            VALUES ('delete', OLD.id, OLD.title, OLD.path, OLD.body);
        INSERT INTO notes_fts (rowid, title, path, body) VALUES (NEW.id, NEW.title, NEW.path, NEW.body);
    END;
"""

_POSTGRES_INDEXED_LATER = """
    COMMENT ON COLUMN notes.search IS
        'derived by notewarden (notes.derived Rule 4); behind with the other derived columns while stale';
"""

SQL_STORE_SCHEMA = SchemaComponent(
    "sql_store",
    tables=(
        "notes",
        "notes_trash",
        "note_tags",
        "tag_counts",
        "note_aliases",
        "note_properties",
        "note_links",
        "links_dirty",
        "notes_gone",
        "note_vectors",
        "vector_models",
    ),
    sqlite=(_SQLITE_SEED, _SQLITE_SEARCH, _SQLITE_KNOWLEDGE, _SQLITE_MEANING, _SQLITE_INDEXED_LATER),
    postgres=(
        _POSTGRES_SEED,
        _POSTGRES_SEARCH,
        _POSTGRES_KNOWLEDGE,
        _POSTGRES_MEANING,
        _POSTGRES_INDEXED_LATER,
    ),
)
