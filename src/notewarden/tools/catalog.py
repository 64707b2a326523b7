"""Every tool notewarden ships, in one list (`app.default_tools`)."""

from __future__ import annotations

from notewarden.services import Services
from notewarden.tools.notes_daily import notes_daily
from notewarden.tools.notes_delete import notes_delete
from notewarden.tools.notes_edit import notes_create, notes_edit, notes_move, notes_update
from notewarden.tools.notes_health import notes_health
from notewarden.tools.notes_history import notes_history, notes_history_purge, notes_revert
from notewarden.tools.notes_knowledge import notes_links, notes_recent, notes_tags
from notewarden.tools.notes_list import notes_list
from notewarden.tools.notes_publish import notes_publish
from notewarden.tools.notes_read import notes_read, notes_read_many
from notewarden.tools.notes_search import notes_search
from notewarden.tools.notes_similar import notes_similar
from notewarden.tools.notes_trash import notes_restore, notes_trash_empty, notes_trash_list
from notewarden.tools.registry import ToolDef

__all__ = ["note_tools"]


def note_tools(services: Services) -> list[ToolDef]:
    return [
        notes_list(services),
        notes_search(services),
        notes_similar(services),
        notes_read(services),
        notes_read_many(services),
        notes_create(services),
        notes_update(services),
        notes_edit(services),
        notes_history(services),
        notes_revert(services),
        notes_history_purge(services),
        notes_move(services),
        notes_delete(services),
        notes_restore(services),
        notes_trash_list(services),
        notes_trash_empty(services),
        notes_publish(services),
        notes_tags(services),
        notes_links(services),
        notes_recent(services),
        notes_health(services),
        notes_daily(services),
    ]
