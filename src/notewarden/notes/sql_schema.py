"""The SQL note store's schema, both dialects, one step per change (`ledger.schema` Rule 1).

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
| tags, front-matter properties  | GIN on `tags`, GIN `jsonb_path_ops` on `front_matter` | JSON text (issue 14 adds its tables) |

The SQLite full-text tables read their text from `notes` (`content='notes'`) and are kept by
triggers on `notes`, so they follow every writer; only the derived columns wait for notewarden
(`notes.derived` Rule 1). PostgreSQL's `path` is compared byte by byte (`COLLATE "C"`): ids sort
as the files store sorts them, and a folder is a range of ids whatever the database's locale.
A GIN index keeps new entries in a pending list that every query reads in full until it is
merged (at 4 MB by default: some 10,000 notes, 30 ms per search); the limit here is 256 kB,
and `notewarden import` merges the lists when it is done. PostgreSQL's planner cannot estimate `derived_version IS DISTINCT FROM version` (two columns), so
it reads it from the stored column `stale`, whose statistics say how rare it is. Step 2 needs the
`pg_trgm` extension (trusted: the database owner running `db upgrade` may
create it).
"""

from __future__ import annotations

from notewarden.ledger.schema import SchemaComponent

__all__ = ["SQL_STORE_SCHEMA"]

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

SQL_STORE_SCHEMA = SchemaComponent(
    "sql_store",
    tables=("notes", "notes_trash"),
    sqlite=(_SQLITE_SEED, _SQLITE_SEARCH),
    postgres=(_POSTGRES_SEED, _POSTGRES_SEARCH),
)
