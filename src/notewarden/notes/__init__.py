"""Notes: the model, the `NoteStore` protocol and its stores (markdown files with an index, rows in
SQLite or PostgreSQL). No SDK imports; files only through `scope` (a `WorkspaceRoot`), the database
only through the ledger's open transaction.
"""
