"""Commits signed as git signs them, where the user's configuration asks it to
(``commit.gpgSign``): an OpenPGP signature by ``gpg`` (``gpg.format=openpgp``, the default)
or an SSH signature by ``ssh-keygen`` (``gpg.format=ssh``), with ``user.signingKey`` and
the program ``gpg.program`` / ``gpg.<format>.program`` name, run with git's own arguments.
``git verify-commit`` and a server that requires signed commits accept what it signs.

A commit that cannot be signed is refused before anything is pushed: git refuses to
commit then too. X.509 signing (``gpgsm``) is refused by name.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from dulwich.config import Config

from .._errors import GitError

__all__ = ["Sign", "signer"]

Sign = Callable[[bytes, str], bytes]
"""The signature of a commit's bytes (without its signature header) by its committer
(``Name <email>``: OpenPGP's key when ``user.signingKey`` names none)."""

_PATIENCE = 120.0  # seconds a signing program may take (a passphrase prompt by an agent)


def signer(config: Config) -> Sign | None:
    """How commits are to be signed by ``config`` (None: they are not)."""
    if not config.get_boolean((b"commit",), b"gpgSign", False):
        return None
    fmt = _get(config, (b"gpg",), b"format") or "openpgp"
    key = _get(config, (b"user",), b"signingKey")
    if fmt == "openpgp":
        program = _get(config, (b"gpg", b"openpgp"), b"program") or _get(
            config, (b"gpg",), b"program"
        )
        return lambda payload, identity: _gpg(program or "gpg", key or identity, payload)
    if fmt == "ssh":
        if not key:
            raise _refused("gpg.format is ssh and user.signingKey names no key")
        program = _get(config, (b"gpg", b"ssh"), b"program") or "ssh-keygen"
        return lambda payload, _identity: _ssh(program, key, payload)
    raise _refused(f"datom does not sign with gpg.format={fmt} (openpgp and ssh only)")


def _gpg(program: str, key: str, payload: bytes) -> bytes:
    done = _run([program, "--status-fd=2", "-bsau", key], payload)
    if b"\n[GNUPG:] SIG_CREATED " not in b"\n" + done.stderr or not done.stdout:
        raise _refused(f"{program} did not sign with the key {key!r}", done.stderr)
    return done.stdout


def _ssh(program: str, key: str, payload: bytes) -> bytes:
    try:
        return _ssh_signed(program, key, payload)
    except OSError as e:  # the temporary folder's disk: full, read-only
        raise _refused(f"the commit could not be handed to {program} ({e})") from None


def _ssh_signed(program: str, key: str, payload: bytes) -> bytes:
    literal = key.startswith(("ssh-", "key::"))  # the key itself: its private half is an agent's
    with tempfile.TemporaryDirectory(prefix="datom-sign-") as folder:
        data = Path(folder) / "commit"
        data.write_bytes(payload)
        keyfile = Path(os.path.expanduser(key))
        if literal:
            keyfile = Path(folder) / "key.pub"
            keyfile.write_text(key.removeprefix("key::"))
        args = [program, "-Y", "sign", "-n", "git", "-f", str(keyfile)]
        done = _run([*args, *(["-U"] if literal else []), str(data)], b"")
        signature = data.with_name("commit.sig")
        if done.returncode != 0 or not signature.exists():
            raise _refused(f"{program} did not sign with the key {key!r}", done.stderr)
        return signature.read_bytes()


def _run(args: list[str], payload: bytes) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(args, input=payload, capture_output=True, timeout=_PATIENCE)
    except (OSError, subprocess.SubprocessError) as e:
        raise _refused(f"{args[0]} could not be run ({e})") from None


def _get(config: Config, section: tuple[bytes, ...], name: bytes) -> str | None:
    try:
        return config.get(section, name).decode()
    except KeyError:
        return None


def _refused(why: str, said: bytes = b"") -> GitError:
    tail = said.decode("utf-8", "replace").strip().splitlines()[-3:]
    return GitError(
        f"Cannot sign the commit as git's commit.gpgSign asks: {why}"
        + (f" ({' '.join(tail)})" if tail else "")
        + ". Nothing was recorded. Set user.signingKey to a key the signing program holds "
        "(git config --global user.signingKey ...; gpg.format for an SSH key), or turn "
        "signing off for this clone (git -C <clone> config commit.gpgSign false)."
    )
