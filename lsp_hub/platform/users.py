"""Who this process runs as, in the form the system compares users by."""

from __future__ import annotations

import getpass
import os
import sys


def current_user() -> str:
    """This process's user: the uid as text on POSIX, the account name on Windows (no uids there)."""
    if sys.platform == "win32":
        return getpass.getuser()
    return str(os.getuid())


def describe_user(user: str) -> str:
    if not user.isdigit():
        return user if user.startswith("(") else f"user {user}"
    return f"uid {user}"


def owned_by_current_user(owner_uid: int) -> bool:
    """Whether a file owner's uid is ours; Windows reports 0 for every file (ownership is in ACLs, not stat)."""
    if sys.platform == "win32":
        return True
    return owner_uid == os.getuid()


def file_modes_are_enforced() -> bool:
    """Whether a file's mode bits keep other users out (POSIX); on Windows the profile's ACLs do instead."""
    return sys.platform != "win32"
