"""Notes: the model, the `NoteStore` protocol and its stores (markdown files with their own SQLite
index, or rows in SQLite or PostgreSQL beside the ledger). No SDK imports; workspace files only
through `scope` (a `WorkspaceRoot`); the ledger's database only through the ledger's transactions.
"""
