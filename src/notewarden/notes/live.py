"""Live changes: which notes changed, told to whoever listens (issue 27). No SDK here: the wire
side (`subscriptions/listen`, rights at delivery, coalescing) is `tools.live`.

Rule 1 (what is an event): a `NoteEvent` names a workspace, a note id and whether the set of notes
changed (`listed`: the note appeared, moved or went). A move is two events, the old id and the new,
both listed. An event says only "look again": it carries no content, no principal, no summary.

Rule 2 (where events come from), three sources, all into one `ChangeFeed` per process:

| source                                  | how                                                        | when |
|-----------------------------------------|------------------------------------------------------------|------|
| a change through this server            | `ChangeFeed.on_record`, called by `ChangeLog.record`       | after the change's COMMIT (`LedgerTxn.on_commit`); never for a rollback |
| a change through another instance       | PostgreSQL `NOTIFY` on `CHANNEL`, sent by that instance's `on_record` in its change's transaction (delivered by PostgreSQL only when it commits), heard by `Relay` | while this instance has a listener |
| a person's editor (files store)         | the index's inotify drain (`IndexRefresh.changes_seen`), run by `Drain` | while a listener may read the workspace |

The files store does not tell its index of a rewrite (the watch does): `on_index` skips a change
whose file identity is the state a recent record of this server left the note in (`RECORDED_KEPT`
of them, noted when the record is written, before its COMMIT), so it is not told twice. Only a drain
that reads the new file between the file step and the record, microseconds apart, tells it twice.

Effects of `change_log` Rule 1: `created`, `moved`, `restored` and `trashed` change the list and the
note; `rewritten` and `relinked` change the note; `purged` (it already left the list), `versions_purged`
and `published` (the note's text is the same) are not events.

Rule 3 (cost): `publish` only hands events to the listeners' callbacks, which must be cheap and
thread-safe (`tools.live` adds to a bounded set under a lock); a writer never waits for a reader.
`Drain` and `Relay` are threads that exist only while someone listens (`Liveness.hold`): the last
listener's release stops them and closes their inotify reads and database connection within
`POLL_SECONDS`. A NOTIFY payload holds at most `PAYLOAD_BYTES`; a record naming more notes sends
several. A notification PostgreSQL could not deliver (this instance's relay connection was down)
is lost: listeners re-list on reconnect (docs/notes-toolset.md, "Live changes").
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from notewarden.ledger import LedgerTxn

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "CHANNEL",
    "POLL_SECONDS",
    "ChangeFeed",
    "Drain",
    "Liveness",
    "NoteEvent",
    "Relay",
]

logger = logging.getLogger(__name__)

CHANNEL = "notewarden_changes"
"""The PostgreSQL NOTIFY channel every instance of one database shares."""
PAYLOAD_BYTES = 7000
"""Below PostgreSQL's 8000-byte NOTIFY payload limit, with room for the envelope."""
POLL_SECONDS = 0.25
"""How often `Drain` reads a workspace's inotify queue, and how soon a stopped thread notices."""
RECORDED_KEPT = 4096
"""Recent changes through this server whose states `on_index` recognizes (not told twice)."""
_LISTED = frozenset({"created", "moved", "restored", "trashed"})
_UPDATED = _LISTED | {"rewritten", "relinked"}


@dataclass(frozen=True, slots=True)
class NoteEvent:
    """Rule 1: this note (of this workspace URI) may have changed; `listed`: the set of notes too."""

    workspace: str
    note_id: str
    listed: bool


Listener = Callable[[Sequence[NoteEvent]], None]


def events_of(workspace: str, effects: Iterable[tuple[str, str, str | None]]) -> list[NoteEvent]:
    """Rule 2's table: the events of a record's notes, given as (note id, effect, previous id)."""
    found: list[NoteEvent] = []
    for note_id, effect, previous_id in effects:
        if effect not in _UPDATED:
            continue
        listed = effect in _LISTED
        found.append(NoteEvent(workspace, note_id, listed))
        if previous_id is not None and previous_id != note_id:
            found.append(NoteEvent(workspace, previous_id, True))
    return found


class ChangeFeed:
    """The process's fan-out of `NoteEvent`s (Rule 2's sources in, `tools.live`'s streams out)."""

    def __init__(self) -> None:
        self.instance = secrets.token_hex(8)
        """Marks this instance's NOTIFYs, which its own relay skips (it published them at COMMIT)."""
        self.notify = False
        """Send a NOTIFY with each change (the ledger is PostgreSQL; set by `services`)."""
        self._listeners: dict[object, Listener] = {}
        self._recorded: dict[tuple[str, str], str] = {}
        """The state each recent change through this server left its note in, oldest first."""
        self._lock = threading.Lock()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        token = object()
        with self._lock:
            self._listeners[token] = listener

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(token, None)

        return unsubscribe

    @property
    def listening(self) -> bool:
        return bool(self._listeners)

    def publish(self, events: Sequence[NoteEvent]) -> None:
        """To every listener, from any thread (Rule 3); a failing listener is logged and skipped."""
        if not events:
            return
        with self._lock:
            listeners = list(self._listeners.values())
        for listener in listeners:
            try:
                listener(events)
            except Exception:  # one broken stream must not fail a writer
                logger.exception("live change listener failed; continuing")

    def on_record(
        self, txn: LedgerTxn, workspace: str, effects: Sequence[tuple[str, str, str | None, str | None]]
    ) -> None:
        """A change's record is being written through `txn`, its notes as (id, effect, previous id,
        state): publish its events once it commits, and (PostgreSQL) NOTIFY the other instances in
        the same transaction."""
        events = events_of(
            workspace, [(note_id, effect, previous) for note_id, effect, previous, _ in effects]
        )
        if not events:
            return
        # Known before the COMMIT: a drain between the file step and the COMMIT recognizes it too
        with self._lock:
            for note_id, _, _, state in effects:
                if state is not None:
                    self._recorded.pop((workspace, note_id), None)
                    self._recorded[(workspace, note_id)] = state
            while len(self._recorded) > RECORDED_KEPT:
                self._recorded.pop(next(iter(self._recorded)))
        txn.on_commit(lambda: self.publish(events))
        if self.notify and txn.dialect == "postgres":
            for payload in self.payloads(workspace, events):
                txn.write_at_commit("SELECT pg_notify(?, ?)", (CHANNEL, payload))

    def payloads(self, workspace: str, events: Sequence[NoteEvent]) -> list[str]:
        """JSON texts of at most `PAYLOAD_BYTES`: {"i": instance, "w": workspace, "n": [[id, listed]…]}."""
        head = len(json.dumps({"i": self.instance, "w": workspace, "n": []}).encode())
        chunks: list[list[tuple[str, int]]] = [[]]
        size = head
        for event in events:
            item = (event.note_id, int(event.listed))
            cost = len(json.dumps(item).encode()) + 1
            if chunks[-1] and size + cost > PAYLOAD_BYTES:
                chunks.append([])
                size = head
            chunks[-1].append(item)
            size += cost
        return [json.dumps({"i": self.instance, "w": workspace, "n": chunk}) for chunk in chunks]

    def on_index(self, workspace: str, seen: Sequence[tuple[str, bool, str | None]]) -> None:
        """What the files store's index found changed (`IndexRefresh.changes_seen`): an editor's
        change, or one of this server's own that the index learns of from its watch (a rewrite is
        not told to the index), which `on_record` already published: skipped by its state."""
        events = []
        with self._lock:
            for note_id, listed, state in seen:
                if state is not None and self._recorded.pop((workspace, note_id), None) == state:
                    continue
                events.append(NoteEvent(workspace, note_id, listed))
        self.publish(events)

    def on_payload(self, payload: str) -> None:
        """A NOTIFY from `Relay`: published unless it is this instance's own or malformed."""
        try:
            message = json.loads(payload)
            if message["i"] == self.instance:
                return
            workspace = str(message["w"])
            events = [NoteEvent(workspace, str(note_id), bool(listed)) for note_id, listed in message["n"]]
        except (ValueError, KeyError, TypeError):
            logger.warning("ignored a malformed change notification", extra={"channel": CHANNEL})
            return
        self.publish(events)


def _name_os_thread(name: str) -> None:
    """The thread's name as `ps -L` and /proc/PID/task/TID/comm show it (Python 3.11 sets none)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


_PR_SET_NAME = 15


class _Loop:
    """A daemon thread running `step` until stopped; `step` returns after at most `POLL_SECONDS`."""

    def __init__(self, name: str, step: Callable[[threading.Event], None]) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(step,), name=name, daemon=True)
        self._thread.start()

    def _run(self, step: Callable[[threading.Event], None]) -> None:
        _name_os_thread(self._thread.name)
        while not self._stop.is_set():
            try:
                step(self._stop)
            except Exception:
                logger.exception("live change source failed; retrying")
                self._stop.wait(1.0)

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class _Ready:
    """What the sources of one generation of threads have done: the workspaces drained since they
    were held, and whether the relay is LISTENing (`Liveness.hold` waits for both)."""

    def __init__(self, lock: threading.Lock) -> None:
        self.changed = threading.Condition(lock)
        self.drained: set[str] = set()
        self.relaying = False

    def drained_once(self, workspace: str) -> None:
        with self.changed:
            self.drained.add(workspace)
            self.changed.notify_all()

    def relay(self, listening: bool) -> None:
        with self.changed:
            self.relaying = listening
            self.changed.notify_all()


class Drain:
    """Reads the watch of each held workspace every `POLL_SECONDS` (`drain(workspace)`: the store's
    index refresh, which tells the feed what it found; the first of a workspace builds its index)."""

    def __init__(self, drain: Callable[[str], None]) -> None:
        self._drain = drain

    def start(self, workspaces: Callable[[], Sequence[str]], ready: _Ready) -> _Loop:
        def step(stop: threading.Event) -> None:
            for workspace in workspaces():
                if stop.is_set():
                    return
                try:
                    self._drain(workspace)
                except Exception:  # a workspace gone or unreadable: the others still drain
                    logger.warning("live drain failed", extra={"workspace": workspace}, exc_info=True)
                ready.drained_once(workspace)
            stop.wait(POLL_SECONDS)

        return _Loop("nw-live-drain", step)


class Relay:
    """LISTENs on `CHANNEL` with a connection of its own (not the pool's: it stays in LISTEN)."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]], feed: ChangeFeed) -> None:
        self._connect = connect
        self._feed = feed

    def start(self, ready: _Ready) -> _Loop:
        def step(stop: threading.Event) -> None:
            try:
                with self._connect() as conn:
                    conn.execute("LISTEN " + CHANNEL)
                    ready.relay(True)
                    while not stop.is_set():
                        for notify in conn.notifies(timeout=POLL_SECONDS):
                            self._feed.on_payload(notify.payload)
            finally:
                ready.relay(False)

        return _Loop("nw-live-relay", step)


class Liveness:
    """Runs `Drain` and `Relay` only while someone listens (Rule 3): `hold(workspaces)` for each
    stream, its return value to release them."""

    def __init__(self, drain: Drain | None, relay: Relay | None) -> None:
        self._drain = drain
        self._relay = relay
        self._held: dict[str, int] = {}
        self._holders = 0
        self._lock = threading.Lock()
        self._loops: list[_Loop] = []
        self._ready = _Ready(self._lock)

    def _workspaces(self) -> list[str]:
        with self._lock:
            return list(self._held)

    def hold(self, workspaces: Iterable[str], *, wait: float = 0.0) -> Callable[[], None]:
        """Hold the sources for these workspaces; with `wait`, block (a worker thread) at most that
        long until each workspace was drained once and the relay LISTENs, so that a change made
        after this returns is heard."""
        mine = list(dict.fromkeys(workspaces))
        with self._lock:
            for workspace in mine:
                self._held[workspace] = self._held.get(workspace, 0) + 1
            self._holders += 1
            if self._holders == 1:
                self._ready = ready = _Ready(self._lock)
                if self._drain is not None:
                    self._loops.append(self._drain.start(self._workspaces, ready))
                if self._relay is not None:
                    self._loops.append(self._relay.start(ready))
            ready = self._ready
            drained = mine if self._drain is not None else []
            relayed = self._relay is not None
            if wait > 0:
                ready.changed.wait_for(
                    lambda: ready.drained.issuperset(drained) and (ready.relaying or not relayed), wait
                )
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                for workspace in mine:
                    left = self._held.get(workspace, 0) - 1
                    if left <= 0:
                        self._held.pop(workspace, None)
                        self._ready.drained.discard(workspace)
                    else:
                        self._held[workspace] = left
                self._holders -= 1
                if self._holders == 0:
                    for loop in self._loops:
                        loop.stop()
                    self._loops = []

        return release

    def close(self, timeout: float = 2.0) -> None:
        """At shutdown: stop and wait for the threads."""
        with self._lock:
            loops, self._loops = self._loops, []
        for loop in loops:
            loop.stop()
        for loop in loops:
            loop.join(timeout)
