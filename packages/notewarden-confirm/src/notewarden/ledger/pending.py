"""Claims whose effect happens outside the critical section: a step that waits on the network.

Nothing slow runs while the ledger's write lock is held: on one host every delete waits on that
lock. A tool whose effect is a request to another service (`notes_publish`) therefore uses two
short critical sections around it: `claim_pending` takes the confirmation with a *pending* outcome
(say "publishing") and commits; the tool does its slow step with no lock held; `settle_pending`
then records the final outcome, or releases the claim when the step failed, so the same
confirmation can be answered again.

Rule 1: a pending claim is a lease, and its `consumed_at` is when it was taken. Another attempt
at the same confirmation finds it and is told the step is under way, until `stale_after` seconds
have passed; then the holder is presumed dead (killed between its step and the record of it) and
the attempt takes the lease over and repeats the step. So a step runs twice only after a crash or
a stall longer than the lease, and the tool sends its idempotency key (the confirmation id) each
time. Instances' clocks must agree within the lease (they already must within the ledger's skew).

Rule 2: settling or releasing names the lease: a holder whose lease was taken over changes
nothing, and the one that took it over records the outcome.

Rule 3: the claim row is the ledger's own (`confirmations`), so a pending claim expires and is
purged like any other, and a final outcome reads as every other tool's. The statements are the
portable SQL of `LedgerTxn.execute`, the same on SQLite and PostgreSQL.
"""

from __future__ import annotations

from notewarden.ledger import Claim, LedgerTxn

__all__ = ["claim_pending", "settle_pending"]


def claim_pending(txn: LedgerTxn, claim: Claim, *, now: float, stale_after: float) -> float | None:
    """Take `claim` (its outcome is the pending one) inside `txn`: the lease when this caller holds
    it, or None when the id is taken, by a final outcome or by a pending claim not yet stale."""
    taken = txn.execute(
        "INSERT INTO confirmations (confirmation_id, principal, tool, outcome, consumed_at, expires_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (confirmation_id) DO NOTHING RETURNING consumed_at",
        claim.row(now),
    ) or txn.execute(
        "UPDATE confirmations SET consumed_at = ? WHERE confirmation_id = ? AND principal = ? "
        "AND outcome = ? AND consumed_at < ? RETURNING consumed_at",
        (now, claim.confirmation_id, claim.principal, claim.outcome, now - stale_after),
    )
    return now if taken else None


def settle_pending(
    txn: LedgerTxn,
    confirmation_id: str,
    principal: str,
    *,
    pending: str,
    lease: float,
    outcome: str | None,
) -> bool:
    """Record `outcome` for the pending claim held under `lease`, or delete it (`outcome` None) so
    the confirmation can be answered again; False when the lease is no longer this caller's."""
    where = "WHERE confirmation_id = ? AND principal = ? AND outcome = ? AND consumed_at = ?"
    held = (confirmation_id, principal, pending, lease)
    if outcome is None:
        rows = txn.execute(f"DELETE FROM confirmations {where} RETURNING confirmation_id", held)
    else:
        rows = txn.execute(
            f"UPDATE confirmations SET outcome = ? {where} RETURNING confirmation_id", (outcome, *held)
        )
    return bool(rows)
