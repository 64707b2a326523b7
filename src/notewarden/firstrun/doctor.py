"""`notewarden doctor [--config FILE]`: is this set-up going to work, and if not, what to do.

Rules:
1. Each check is one function in `CHECKS` that returns findings: `ok`, `warn` (works, but
   worth knowing) or `fail` (will not work, or breaks a promise). Every warn and fail carries
   the fix, as a command or the config line to change.
2. Nothing is changed: the state dir is not created, no schema is upgraded, no key is made.
   Databases are opened read-only.
3. Exit status: 0 when nothing failed, 1 when something did, 2 when the config cannot be read
   (then nothing else is checked).
5. What `serve` refuses is judged by `setup_checks`, the same functions `serve` runs, in the same
   words: a FAIL here is a refusal there. A check that depends on a failed one (the trash of a
   folder that cannot be opened, the sealing key inside an unusable state dir) says it was not
   checked, rather than failing a second time with a misleading fix.
4. Rights are shown as the server reads them: one line per principal, each grant (a workspace or
   a folder in one) with its rights, a bundle's name where they are exactly one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

from notewarden.config import Config, ConfigError, load_config
from notewarden.firstrun.config_file import default_config_path
from notewarden.notes.ownership import sharing_notice, sharing_refusal
from notewarden.scope.rights import BUNDLES, Right, describe_rights
from notewarden.sealing import KEYS_ENV, SealingKeyError, key_file_problem, keys_from_env
from notewarden.setup_checks import state_dir_problem, workspace_problems, workspaces_problem
from notewarden.storage import LEDGERS
from notewarden.trashcommand import trash_reports

__all__ = ["CHECKS", "Finding", "run_doctor"]

Status = Literal["ok", "warn", "fail", "skip"]
MAX_DIRS_COUNTED = 200_000
_INOTIFY = Path("/proc/sys/fs/inotify")


@dataclass(frozen=True, slots=True)
class Finding:
    status: Status
    topic: str
    detail: str
    fix: str = ""


def _folder(config: Config) -> Iterator[Finding]:
    """Rule 5: `setup_checks`' judges of the workspaces, as `serve` runs them."""
    if (none := workspaces_problem(config)) is not None:
        yield Finding("fail", "workspace", none.what, none.fix)
        return
    if not config.storage.workspaces_are_directories:
        yield Finding("ok", "workspaces", f"notes are rows in {config.storage.notes}; no folders to check")
        return
    for uri, problem in workspace_problems(config):
        if problem is not None:
            yield Finding("fail", "workspace", problem.what, problem.fix)
        else:
            yield Finding("ok", "workspace", uri.path)


def _state_dir(config: Config) -> Iterator[Finding]:
    """Rule 5: `setup_checks.state_dir_problem`, as `serve` runs it."""
    state = config.state_dir
    problem = state_dir_problem(state)
    if problem is not None:
        yield Finding("fail", "state dir", problem.what, problem.fix)
    elif not state.exists():
        yield Finding("ok", "state dir", f"{state} (created at the first start)")
    else:
        yield Finding("ok", "state dir", str(state))


def _one_state_dir(config: Config) -> Iterator[Finding]:
    """Who owns each workspace folder's trash (`notes.ownership`): this config's ledger, another
    one this config's servers will share, or one they cannot use (their trash tools then refuse)."""
    unusable = {str(uri) for uri, problem in workspace_problems(config) if problem is not None}
    for report in trash_reports(config):
        if isinstance(report, str) or report.workspace in unusable:
            shown = report if isinstance(report, str) else report.workspace
            yield Finding(
                "skip", "trash owner", f"not checked: {shown.split(': ')[0]} cannot be opened (above)"
            )
            continue
        folder = report.workspace.removeprefix("file://")
        owner = report.owner
        if report.owner_problem is not None or owner is None or report.owned:
            finding = report.lines()[0]
            status: Status = "fail" if report.owner_problem is not None else "ok"
            fix = f"notewarden takeover {folder} --config {config.source}" if status == "fail" else ""
            yield Finding(status, "trash owner", finding, fix)
        elif (refusal := sharing_refusal(owner)) is None:
            yield Finding("warn", "trash owner", *sharing_notice(folder, owner))
        else:
            yield Finding(
                "fail",
                "trash owner",
                f"{folder} is owned by {owner.describe()}, which this config cannot use ({refusal}): its "
                "servers refuse notes_delete, notes_restore and notes_trash_empty there",
                f"serve it with the owner's configuration, or if that owner is gone: notewarden takeover "
                f"{folder} --config {config.source}",
            )
        for line in report.lines()[1:]:
            yield Finding(
                "warn", "trash", line.strip(), "notewarden doctor lists it until its ledger settles it"
            )


def _sandbox(config: Config) -> Iterator[Finding]:
    import landlockpy

    if not config.sandbox.enabled:
        yield Finding(
            "warn", "sandbox", "disabled by [sandbox] enabled = false", "set [sandbox] enabled = true"
        )
        return
    try:
        abi = landlockpy.abi_version()
    except OSError as exc:
        abi, why = 0, f"landlock_create_ruleset failed ({exc.strerror})"
    else:
        why = "this kernel has no Landlock"
    if abi < 1:
        yield Finding(
            "warn",
            "sandbox",
            f"{why}: the server runs without its Landlock layer (authorization and containment still hold)",
            "use Linux >= 5.13 with lsm=landlock, or allow landlock_* syscalls in the container's seccomp profile",
        )
    else:
        yield Finding("ok", "sandbox", f"Landlock ABI {abi}")


def _inotify(config: Config) -> Iterator[Finding]:
    if not config.storage.workspaces_are_directories:
        return
    try:
        watches = int((_INOTIFY / "max_user_watches").read_text())
        instances = int((_INOTIFY / "max_user_instances").read_text())
    except (OSError, ValueError):
        yield Finding("warn", "inotify", "no inotify here: the index rescans folders instead (slower search)")
        return
    folders = 0
    for uri in config.workspaces:
        for _root, dirs, _files in os.walk(uri.path):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            folders += 1
            if folders > MAX_DIRS_COUNTED:
                break
    if folders > watches // 2:
        yield Finding(
            "fail",
            "inotify",
            f"{folders} folders to watch, the limit is {watches} watches per user (shared with other programs)",
            f"sudo sysctl fs.inotify.max_user_watches={max(524288, folders * 4)} (and in /etc/sysctl.d/)",
        )
    else:
        yield Finding(
            "ok", "inotify", f"{folders} folder(s) to watch of {watches}; {instances} instances per user"
        )


def _sealing_keys(config: Config) -> Iterator[Finding]:
    shared_ledger = LEDGERS[config.storage.ledger].shared
    try:
        keys = keys_from_env()
    except SealingKeyError as exc:
        yield Finding("fail", "sealing keys", exc.problem, exc.fix)
        return
    if keys is not None:
        yield Finding("ok", "sealing keys", f"{len(keys)} key(s) from ${KEYS_ENV}")
        return
    if state_dir_problem(config.state_dir) is not None:
        yield Finding(
            "skip", "sealing keys", "not checked: they are kept in the state dir, which is unusable (above)"
        )
        return
    path = config.state_dir / "sealing-keys"
    if (problem := key_file_problem(path)) is not None:  # as serve refuses it (sealing.py)
        yield Finding("fail", "sealing keys", problem.problem, problem.fix)
    elif shared_ledger:
        yield Finding(
            "warn",
            "sealing keys",
            "PostgreSQL ledger with a key made on this host: other instances cannot finish this one's "
            "confirmations",
            f"give every instance the same keys: export {KEYS_ENV}=<64 hex digits> (docs/deployment.md)",
        )
    else:
        made = "exists" if path.exists() else "made at the first start"
        yield Finding("ok", "sealing keys", f"{path} ({made})")


def _postgres(config: Config) -> Iterator[Finding]:
    if config.storage.ledger != "postgres":
        return
    from notewarden.ledger import LedgerUnavailable
    from notewarden.schema import SchemaOutOfDate
    from notewarden.storage import schema_status

    try:
        current, lines = schema_status(config)
    except (LedgerUnavailable, SchemaOutOfDate, OSError) as exc:
        yield Finding(
            "fail",
            "postgres",
            f"not reachable: {exc}",
            "check NOTEWARDEN_DATABASE_URL and that the server is up",
        )
        return
    where = dict(lines).get("database", "")
    if current:
        yield Finding("ok", "postgres", f"{where}; schema up to date")
    else:
        yield Finding(
            "fail",
            "postgres",
            f"{where}; schema is behind",
            f"notewarden db upgrade --config {config.source}",
        )


def _clients(config: Config) -> Iterator[Finding]:
    if config.stdio_principal is None:
        yield Finding(
            "warn",
            "stdio",
            "no [stdio] principal: desktop clients cannot start it over stdio",
            'add [stdio] principal = "<id>"',
        )
    http_ready = [p.id for p in config.principals.values() if p.token_sha256 or p.oauth_subjects]
    if http_ready or config.oauth is not None:
        yield Finding("ok", "http", f"principals with credentials: {', '.join(http_ready) or 'none yet'}")


def _spelled(rights: frozenset[Right]) -> str:
    """Rule 4: `read, write, delete (maintainer)`."""
    bundle = next((name for name, held in BUNDLES.items() if held == rights), None)
    return describe_rights(rights) + (f" ({bundle})" if bundle else "")


def _rights(config: Config) -> Iterator[Finding]:
    """What each principal may do where (Rule 4), and publish targets nobody may publish to."""
    for principal in config.principals.values():
        grants = [(w.joinpath(g.folder), g.rights) for w, held in principal.grants.items() for g in held]
        if not any(rights for _, rights in grants):
            yield Finding(
                "warn",
                "rights",
                f"{principal.id} holds no rights anywhere: every call it makes is refused",
                f'give it rights: rights = ["reader"] under its [[principal]] (id = "{principal.id}")',
            )
            continue
        shown = "; ".join(f"{uri} {_spelled(rights)}" for uri, rights in grants)
        yield Finding("ok", "rights", f"{principal.id}: {shown}")
    targets = config.publish.targets
    publishers = [
        p.id
        for p in config.principals.values()
        if any(Right.PUBLISH in g.rights for held in p.grants.values() for g in held)
    ]
    if targets and not publishers:
        yield Finding(
            "warn",
            "rights",
            f"{len(targets)} [publish] target(s) configured, but no principal holds the right publish "
            "(a grant without rights gives maintainer, which leaves it out): notes_publish is refused to all",
            'add publish to the rights of who may publish, e.g. rights = ["maintainer", "publish"]',
        )


def _search(config: Config) -> Iterator[Finding]:
    """Which mode search answers in (issue 25): words and meaning with a model, or words only, and why."""
    from notewarden.embeddings import EmbeddingFailed, LoadedOnFirstUse, open_search_mode

    mode = open_search_mode(config.search)  # never raises: a broken install fails at load() below
    if mode.mode == "hybrid" and isinstance(mode.embedder, LoadedOnFirstUse):
        try:
            mode.embedder.load()  # serve reads it at the first search (embeddings Rule 4); say now if it works
        except EmbeddingFailed as failed:
            yield Finding(
                "warn", "search", f"by words only: {failed}", "reinstall: pip install 'notewarden[semantic]'"
            )
            return
    if mode.mode == "hybrid":
        yield Finding("ok", "search", f"{mode.reason}; meaning weighs {mode.meaning_weight:g} against words")
    elif config.search.provider == "off":
        yield Finding("ok", "search", f"by words only: {mode.reason}")
    else:
        yield Finding(
            "warn",
            "search",
            f"by words only: {mode.reason}",
            "pip install 'notewarden[semantic]' (the model ships in the package; nothing is downloaded)",
        )


CHECKS: Sequence[Callable[[Config], Iterator[Finding]]] = (
    _folder,
    _state_dir,
    _one_state_dir,
    _sandbox,
    _inotify,
    _sealing_keys,
    _postgres,
    _clients,
    _rights,
    _search,
)
_MARK = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "--  "}


def run_doctor(config_path: str | None, *, out: TextIO = sys.stdout) -> int:
    path = Path(config_path).expanduser() if config_path else default_config_path()
    print(f"notewarden doctor: {path}", file=out)
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"  FAIL  config         {exc.problem}", file=out)
        default_fix = "notewarden init [DIR ...]" if not path.exists() else "edit the file"
        print(f"        fix: {exc.fix or default_fix}", file=out)
        return 2
    print(
        f"  ok    config         {len(config.workspaces)} workspace(s), {len(config.principals)} principal(s)",
        file=out,
    )
    failed = False
    for check in CHECKS:
        for finding in check(config):
            failed |= finding.status == "fail"
            print(f"  {_MARK[finding.status]}  {finding.topic:<14} {finding.detail}", file=out)
            if finding.fix:
                print(f"        fix: {finding.fix}", file=out)
    print("\n" + ("Something needs fixing (FAIL above)." if failed else "All checks passed."), file=out)
    return 1 if failed else 0
