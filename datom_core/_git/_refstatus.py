"""A push's answer per ref: a lost race (redo the write) or a refusal (ask the owner)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .._errors import GitError, PushRejectedError

__all__ = ["SAID_MAX", "check_ref_status", "storage_fault"]

# The status a server gives a ref whose compare-and-swap lost to a concurrent push, old and
# new: git's receive-pack said "failed to lock" / "failed to write" (before 2.2), "failed
# to update ref" (2.2 to 2.49, the cause on stderr: "cannot lock ref '<ref>': is at <x> but
# expected <y>", or "... File exists" for a concurrent push's lock), "atomic transaction
# failed" / "atomic push failure" (an --atomic push), and from 2.50 the transaction's own
# words ("incorrect old value provided", "reference already exists", "reference does not
# exist", "failed to update refs"); dulwich's server says "failed to write"; a client or a
# hosting service "non-fast-forward", "fetch first", "stale info".
_RACE_STATUSES = ("non-fast-forward", "fetch first", "stale info", "atomic push failed",
                  "atomic push failure", "atomic transaction failed", "unable to set",
                  "incorrect old value", "reference already exists",
                  "reference does not exist")  # fmt: skip
# Wordings that also cover a lasting fault (a ref folder the server may not write, a full
# disk): a race only if the ref moved meanwhile or the server's messages say another push
# held or moved it.
_MAYBE_RACE_STATUSES = ("failed to update ref", "failed to lock", "failed to write",
                        "cannot lock ref", "transaction failed to start", "unknown failure")  # fmt: skip
_CONTENTION = ("but expected", "file exists", "reference already exists", "incorrect old value")
SAID_MAX = 2000  # characters of the server's messages kept for an error
# The server took the push in but failed to store it, and left the ref alone: git's
# receive-pack moves the pushed objects out of their quarantine before it updates any ref,
# and a concurrent ``git gc`` removing empty object folders can fail that move. The same
# push may be stored a moment later.
_STORAGE_FAULTS = ("unable to migrate objects to permanent storage",)


def storage_fault(ref_status: Mapping[bytes, str | None]) -> bool:
    """Whether the server refused a ref only because it failed to store the push."""
    return any(s is not None and s.lower().startswith(_STORAGE_FAULTS) for s in ref_status.values())


def check_ref_status(
    ref_status: Mapping[bytes, str | None],
    url: str,
    moved: Callable[[], bool] = lambda: False,
    said: str = "",
) -> None:
    """Raise for every ref the remote refused to update: :class:`PushRejectedError` for a
    push that lost a race (redo the write), :class:`GitError` for a refusal. ``moved()``
    tells whether the remote's branch left the commit the push expected; ``said`` is what
    the server printed (receive-pack's reasons)."""
    for ref, status in ref_status.items():
        if status is None:
            continue
        if _lost_race(status, said, moved):
            raise PushRejectedError(
                f"Push to {url} rejected for {ref.decode()} ({status}): another writer moved "
                "it. Call fetch_and_reset(), redo the write, and push again."
            )
        detail = " ".join(said.split())[-SAID_MAX:]
        raise GitError(
            f"The remote {url} refused the push of {ref.decode()}: {status}"
            + (f" (the server said: {detail})" if detail else "")
            + ". A server-side rule (hook, branch protection) or fault declined it; ask the "
            "repository's owner."
        )


def _lost_race(status: str, said: str, moved: Callable[[], bool]) -> bool:
    lowered, heard = status.lower(), said.lower()
    if any(s in lowered for s in _RACE_STATUSES):
        return True
    if not any(lowered.startswith(s) for s in _MAYBE_RACE_STATUSES):
        return False
    return any(c in heard for c in _CONTENTION) or moved()
