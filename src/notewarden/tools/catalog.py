"""Every tool notewarden ships, in one list (`app.default_tools`): each declaration (`declare`, beside
its handler in its module) served by its handler, one line a tool."""

from __future__ import annotations

from notewarden.services import Services
from notewarden.tools.notes_daily import NOTES_DAILY, DailyTool
from notewarden.tools.notes_delete import NOTES_DELETE, DeleteTool
from notewarden.tools.notes_edit import NOTES_CREATE, NOTES_EDIT, NOTES_MOVE, NOTES_UPDATE, EditTools
from notewarden.tools.notes_health import NOTES_HEALTH, HealthTool
from notewarden.tools.notes_history import NOTES_HISTORY, NOTES_HISTORY_PURGE, NOTES_REVERT, HistoryTools
from notewarden.tools.notes_knowledge import NOTES_LINKS, NOTES_RECENT, NOTES_TAGS, KnowledgeTools
from notewarden.tools.notes_list import NOTES_LIST, ListTool
from notewarden.tools.notes_publish import NOTES_PUBLISH, PublishTool
from notewarden.tools.notes_read import NOTES_READ, NOTES_READ_MANY, ReadTools
from notewarden.tools.notes_search import NOTES_SEARCH, SearchTool
from notewarden.tools.notes_similar import NOTES_SIMILAR, SimilarTool
from notewarden.tools.notes_trash import NOTES_RESTORE, NOTES_TRASH_EMPTY, NOTES_TRASH_LIST, TrashTools
from notewarden.tools.registry import ToolDef

__all__ = ["note_tools"]


def note_tools(services: Services) -> list[ToolDef]:
    edit, history, knowledge = EditTools(services), HistoryTools(services), KnowledgeTools(services)
    read, trash = ReadTools(services), TrashTools(services)
    return [
        NOTES_LIST.served_by(ListTool(services)),
        NOTES_SEARCH.served_by(SearchTool(services)),
        NOTES_SIMILAR.served_by(SimilarTool(services)),
        NOTES_READ.served_by(read.read),
        NOTES_READ_MANY.served_by(read.read_many),
        NOTES_CREATE.served_by(edit.create),
        NOTES_UPDATE.served_by(edit.update),
        NOTES_EDIT.served_by(edit.edit),
        NOTES_HISTORY.served_by(history.list_versions),
        NOTES_REVERT.served_by(history.revert),
        NOTES_HISTORY_PURGE.served_by(history.purge),
        NOTES_MOVE.served_by(edit.move),
        NOTES_DELETE.served_by(DeleteTool(services)),
        NOTES_RESTORE.served_by(trash.restore),
        NOTES_TRASH_LIST.served_by(trash.list_entries),
        NOTES_TRASH_EMPTY.served_by(trash.empty),
        NOTES_PUBLISH.served_by(PublishTool(services).publish),
        NOTES_TAGS.served_by(knowledge.tags),
        NOTES_LINKS.served_by(knowledge.links),
        NOTES_RECENT.served_by(knowledge.recent),
        NOTES_HEALTH.served_by(HealthTool(services)),
        NOTES_DAILY.served_by(DailyTool(services)),
    ]
