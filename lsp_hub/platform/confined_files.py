"""Files under a workspace root, read and written so that no race can take a path outside it.

A path is never checked and then used again by name. Every component is opened relative to the directory
descriptor of the one before it (`os.open(..., dir_fd=...)`) with `O_NOFOLLOW`, starting from a descriptor of the
root; a symbolic link met on the way is read (`readlink` at that descriptor), its target checked to stay inside
the root, and the walk starts again from the root with the target spelled out. A write creates its temporary file
and renames it within the final directory's descriptor. So a directory swapped for a symbolic link between any two
steps makes the walk fail or follow a link it checked at that moment; it never redirects the write.

Where the platform has no `dir_fd` (Windows), every component is checked to be no symbolic link before the path
is used, and a symbolic link anywhere in a path is refused with a sentence saying why.

Standard library only (`lsp-hub query` imports it). Errors are `FileRefused` with one sentence naming the file."""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

# dir_fd support for every call the walk and the write make.
HAS_DIR_FD = all(
    function in os.supports_dir_fd for function in (os.open, os.stat, os.mkdir, os.rename, os.unlink, os.readlink)
)
MAX_LINK_HOPS = 40  # as Linux's own path walk
NAME_MAX_BYTES = 255  # every file system lsp-hub runs on
TEMPORARY_PREFIX = ".lsp-hub-"  # short, so a name near the limit still has room for the temporary beside it
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation

_REASONS = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the file system is read-only",
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exhausted",
    errno.ENAMETOOLONG: "the name is too long for the file system",
    errno.EISDIR: "it is a directory",
    errno.ENOTDIR: "a part of the path is not a directory",
    errno.EINVAL: "the file system refuses this name",
    errno.EILSEQ: "the file system refuses this name",
    errno.EMLINK: "too many links",
    errno.EIO: "an input/output error",
}


class FileRefused(Exception):
    """One sentence saying what was not done and why; the file is as it was."""


class FileMissing(FileRefused):
    """Nothing by that name (or a directory on its way is missing)."""


@dataclass(frozen=True)
class ReadResult:
    path: Path  # inside the root, symbolic links followed
    data: bytes
    mode: int


@dataclass(frozen=True)
class WriteResult:
    path: Path  # inside the root, symbolic links followed
    created: bool


def reason(error: OSError) -> str:
    """An OSError as a few words a person understands."""
    return _REASONS.get(error.errno or 0, error.strerror or str(error))


class ConfinedRoot:
    """Read and write files under `root` (its real path); nothing outside it, whatever races the paths."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(os.path.realpath(root))

    # ======================================================================================== names
    def parts(self, name: str | Path) -> list[str]:
        """The components of `name` below the root: relative names are taken from the root, absolute ones must be
        under it (as written, or once the root's own symbolic links are resolved). `~` is an ordinary character.
        Lexical: `a/../b` is `b`; the walk does the rest."""
        text = os.fspath(name)
        if not text or "\0" in text:
            raise FileRefused("give a file path")
        if os.path.isabs(text):
            absolute = os.path.normpath(text)
            relative = self._below_root(absolute)
            if relative is None:
                # The caller may name the root through a symbolic link of its own (/tmp -> /private/tmp).
                parent = os.path.realpath(os.path.dirname(absolute))
                relative = self._below_root(os.path.join(parent, os.path.basename(absolute)))
            if relative is None:
                raise FileRefused(f"{text} is outside the workspace {self.root}; nothing outside it is read or written")
        else:
            relative = os.path.normpath(text)
            if relative == os.curdir:
                relative = ""
        pieces = [piece for piece in relative.replace(os.sep, "/").split("/") if piece not in ("", ".")]
        if pieces and pieces[0] == os.pardir:
            raise FileRefused(f"{text} is outside the workspace {self.root}; nothing outside it is read or written")
        for piece in pieces:
            size = len(os.fsencode(piece))
            if size > NAME_MAX_BYTES:
                raise FileRefused(
                    f"the name {piece[:40]}... is {size} bytes long; file systems allow at most "
                    f"{NAME_MAX_BYTES} bytes in one name"
                )
        return pieces

    def _below_root(self, absolute: str) -> str | None:
        root = str(self.root)
        if absolute == root:
            return ""
        prefix = root if root.endswith(os.sep) else root + os.sep
        return absolute[len(prefix) :] if absolute.startswith(prefix) else None

    def path_of(self, parts: list[str]) -> Path:
        return self.root.joinpath(*parts)

    def display(self, parts: list[str]) -> str:
        return "/".join(parts) or "."

    # ======================================================================================== the walk
    def _link_target(self, parts: list[str], index: int, link: str) -> list[str]:
        """The components of what the symbolic link `parts[index]` points at, if that is inside the root."""
        if posixpath.isabs(link) or os.path.isabs(link):
            relative = self._below_root(os.path.normpath(link))
            if relative is None:
                raise FileRefused(
                    f"{self.display(parts[: index + 1])} is a symbolic link to {link}, which "
                    "is outside the workspace; nothing outside it is read or written"
                )
            target = [piece for piece in relative.replace(os.sep, "/").split("/") if piece not in ("", ".")]
        else:
            joined = posixpath.normpath(posixpath.join("/".join(parts[:index]), link.replace(os.sep, "/")))
            target = [piece for piece in joined.split("/") if piece not in ("", ".")]
            if target and target[0] == "..":
                raise FileRefused(
                    f"{self.display(parts[: index + 1])} is a symbolic link to {link}, which "
                    "is outside the workspace; nothing outside it is read or written"
                )
        return target + parts[index + 1 :]

    def _open_directory(self, parts: list[str], *, create: bool) -> tuple[int, list[str]]:
        """A descriptor of the directory holding the last component, and the components as followed (links
        inside the root replaced by their targets). Missing directories are created when `create`."""
        hops = 0
        while True:
            descriptor = os.open(self.root, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
            try:
                for index in range(len(parts) - 1):
                    child = self._open_child_directory(descriptor, parts, index, create)
                    if isinstance(child, list):  # a symbolic link: walk its target from the root
                        raise _Restart(child)
                    os.close(descriptor)
                    descriptor = child
            except _Restart as restart:
                os.close(descriptor)
                hops += 1
                if hops > MAX_LINK_HOPS:
                    raise FileRefused(f"{self.display(parts)}: too many symbolic links") from None
                parts = restart.parts
                continue
            except BaseException:
                os.close(descriptor)
                raise
            return descriptor, parts

    def _open_child_directory(self, descriptor: int, parts: list[str], index: int, create: bool) -> int | list[str]:
        name = parts[index]
        for _ in range(2):
            try:
                return os.open(name, os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC, dir_fd=descriptor)
            except FileNotFoundError:
                if not create:
                    raise FileMissing(
                        f"{self.display(parts)}: no such directory {self.display(parts[: index + 1])}"
                    ) from None
                try:
                    os.mkdir(name, 0o777, dir_fd=descriptor)
                except FileExistsError:
                    continue  # someone made it meanwhile: open what is there now
                except OSError as error:
                    raise FileRefused(
                        f"cannot create the directory {self.display(parts[: index + 1])}: {reason(error)}"
                    ) from None
            except OSError as error:
                try:
                    link = os.readlink(name, dir_fd=descriptor)
                except OSError:
                    if error.errno in (errno.ENOTDIR, errno.ELOOP):
                        raise FileRefused(
                            f"{self.display(parts)}: {self.display(parts[: index + 1])} is not a directory"
                        ) from None
                    raise FileRefused(f"cannot open {self.display(parts[: index + 1])}: {reason(error)}") from None
                return self._link_target(parts, index, link)
        raise FileRefused(f"cannot open {self.display(parts[: index + 1])}: it keeps changing")

    def _resolve_leaf(self, parts: list[str], *, create: bool) -> tuple[int, list[str], os.stat_result | None]:
        """The final directory's descriptor, the components as followed, and the last one's lstat (None: absent).
        A last component that is a symbolic link is followed when it stays inside the root."""
        if not parts:
            raise FileRefused(f"{self.root} is the workspace directory, not a file")
        hops = 0
        while True:
            descriptor, parts = self._open_directory(parts, create=create)
            try:
                info = os.stat(parts[-1], dir_fd=descriptor, follow_symlinks=False)
            except FileNotFoundError:
                return descriptor, parts, None
            except OSError as error:
                os.close(descriptor)
                raise FileRefused(f"cannot look at {self.display(parts)}: {reason(error)}") from None
            if not stat.S_ISLNK(info.st_mode):
                return descriptor, parts, info
            try:
                link = os.readlink(parts[-1], dir_fd=descriptor)
            except OSError as error:
                os.close(descriptor)
                raise FileRefused(f"cannot read the link {self.display(parts)}: {reason(error)}") from None
            os.close(descriptor)
            parts = self._link_target(parts, len(parts) - 1, link)
            hops += 1
            if hops > MAX_LINK_HOPS:
                raise FileRefused(f"{self.display(parts)}: too many symbolic links")
            if not parts:
                raise FileRefused(f"{link} is the workspace directory, not a file")

    # ======================================================================================== reading
    def read(self, name: str | Path) -> ReadResult:
        """The bytes of a regular file under the root (a FIFO or device is refused without blocking)."""
        parts = self.parts(name)
        if not HAS_DIR_FD:
            return self._read_by_name(parts)
        descriptor, parts, info = self._resolve_leaf(parts, create=False)
        try:
            if info is None:
                raise FileMissing(f"{self.display(parts)}: no such file in the workspace")
            if not stat.S_ISREG(info.st_mode):
                raise FileRefused(f"{self.display(parts)} is {file_kind(info.st_mode)}, not a regular file")
            try:
                handle = os.open(
                    parts[-1], os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY, dir_fd=descriptor
                )
            except FileNotFoundError:
                raise FileMissing(f"{self.display(parts)}: no such file in the workspace") from None
            except OSError as error:
                raise FileRefused(f"cannot read {self.display(parts)}: {reason(error)}") from None
            return self._read_open(handle, parts)
        finally:
            os.close(descriptor)

    def _read_open(self, handle: int, parts: list[str]) -> ReadResult:
        try:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode):  # swapped since the lstat
                raise FileRefused(f"{self.display(parts)} is {file_kind(info.st_mode)}, not a regular file")
            chunks = []
            while chunk := os.read(handle, 1 << 20):
                chunks.append(chunk)
            return ReadResult(self.path_of(parts), b"".join(chunks), stat.S_IMODE(info.st_mode))
        except OSError as error:
            raise FileRefused(f"cannot read {self.display(parts)}: {reason(error)}") from None
        finally:
            os.close(handle)

    def stat(self, name: str | Path) -> tuple[Path, os.stat_result | None]:
        """Where `name` leads inside the root and what is there (None: nothing yet)."""
        parts = self.parts(name)
        if not HAS_DIR_FD:
            self._refuse_links(parts)
            path = self.path_of(parts)
            try:
                return path, os.stat(path, follow_symlinks=False)
            except FileNotFoundError:
                return path, None
        try:
            descriptor, parts, info = self._resolve_leaf(parts, create=False)
        except FileMissing:
            return self.path_of(parts), None
        os.close(descriptor)
        return self.path_of(parts), info

    # ======================================================================================== writing
    def write(self, name: str | Path, data: bytes, *, force: bool = False) -> WriteResult:
        """Replace (or create) the file atomically: a temporary file in the same directory, then a rename within
        that directory's descriptor; missing directories are created. An existing file keeps its mode; a
        read-only one is refused unless `force`. No temporary file outlives a failed write."""
        parts = self.parts(name)
        if not HAS_DIR_FD:
            return self._write_by_name(parts, data, force=force)
        descriptor, parts, info = self._resolve_leaf(parts, create=True)
        try:
            return self._write_at(descriptor, parts, info, data, force=force)
        finally:
            os.close(descriptor)

    def _write_at(
        self, descriptor: int, parts: list[str], info: os.stat_result | None, data: bytes, *, force: bool
    ) -> WriteResult:
        where = self.display(parts)
        mode = self._mode_for(where, info, force=force)
        directory = os.fstat(descriptor)
        if directory.st_mode & 0o222 == 0:  # also for root, whom the kernel would let through
            raise FileRefused(f"not written: the directory of {where} is read-only; the file is unchanged")
        temporary = f"{TEMPORARY_PREFIX}{os.urandom(6).hex()}.tmp"
        try:
            handle = os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY,
                0o600,
                dir_fd=descriptor,
            )
        except OSError as error:
            raise FileRefused(f"not written: {where}: {reason(error)}; the file is unchanged") from None
        try:
            try:
                _write_all(handle, data)
                if sys.platform != "win32":  # Windows keeps no mode bits beyond read-only
                    os.fchmod(handle, mode)
                os.fsync(handle)
            finally:
                os.close(handle)
            os.rename(temporary, parts[-1], src_dir_fd=descriptor, dst_dir_fd=descriptor)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=descriptor)
            raise FileRefused(f"not written: {where}: {reason(error)}; the file is unchanged") from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=descriptor)
            raise
        return WriteResult(self.path_of(parts), info is None)

    def _mode_for(self, where: str, info: os.stat_result | None, *, force: bool) -> int:
        if info is None:
            return 0o666 & ~_umask()
        if stat.S_ISDIR(info.st_mode):
            raise FileRefused(f"not written: {where} is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"not written: {where} is {file_kind(info.st_mode)}, not a regular file")
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o222 == 0 and not force:
            raise FileRefused(
                f"not written: {where} is read-only (mode {mode:o}); the file is unchanged (pass force to replace it)"
            )
        return mode

    def remove(self, name: str | Path) -> Path:
        """Delete a regular file under the root (undoing a write that created it); nothing there is fine."""
        parts = self.parts(name)
        if not HAS_DIR_FD:
            self._refuse_links(parts)
            path = self.path_of(parts)
            with contextlib.suppress(FileNotFoundError):
                if not stat.S_ISREG(os.stat(path, follow_symlinks=False).st_mode):
                    raise FileRefused(f"not removed: {self.display(parts)} is not a regular file")
                os.unlink(path)
            return path
        descriptor, parts, info = self._resolve_leaf(parts, create=False)
        try:
            if info is None:
                return self.path_of(parts)
            if not stat.S_ISREG(info.st_mode):
                raise FileRefused(f"not removed: {self.display(parts)} is {file_kind(info.st_mode)}")
            try:
                os.unlink(parts[-1], dir_fd=descriptor)
            except FileNotFoundError:
                pass
            except OSError as error:
                raise FileRefused(f"not removed: {self.display(parts)}: {reason(error)}") from None
            return self.path_of(parts)
        finally:
            os.close(descriptor)

    # ======================================================================================== no dir_fd
    def _refuse_links(self, parts: list[str]) -> None:
        """Without dir_fd a link could be swapped in after any check: refuse every symbolic link in the path."""
        for index in range(len(parts)):
            path = self.path_of(parts[: index + 1])
            if os.path.islink(path):
                raise FileRefused(
                    f"{self.display(parts[: index + 1])} is a symbolic link; on this platform lsp-hub "
                    "cannot open paths relative to a directory, so it follows no symbolic links "
                    "in the files it reads or writes"
                )

    def _read_by_name(self, parts: list[str]) -> ReadResult:
        self._refuse_links(parts)
        path = self.path_of(parts)
        try:
            handle = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_BINARY)
        except FileNotFoundError:
            raise FileMissing(f"{self.display(parts)}: no such file in the workspace") from None
        except OSError as error:
            raise FileRefused(f"cannot read {self.display(parts)}: {reason(error)}") from None
        return self._read_open(handle, parts)

    def _write_by_name(self, parts: list[str], data: bytes, *, force: bool) -> WriteResult:
        self._refuse_links(parts)
        where = self.display(parts)
        path = self.path_of(parts)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise FileRefused(f"cannot create the directory of {where}: {reason(error)}") from None
        self._refuse_links(parts)
        try:
            info: os.stat_result | None = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        mode = self._mode_for(where, info, force=force)
        if os.stat(path.parent).st_mode & 0o222 == 0:
            raise FileRefused(f"not written: the directory of {where} is read-only; the file is unchanged")
        temporary = path.parent / f"{TEMPORARY_PREFIX}{os.urandom(6).hex()}.tmp"
        try:
            handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o600)
            try:
                _write_all(handle, data)
                os.fsync(handle)
            finally:
                os.close(handle)
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise FileRefused(f"not written: {where}: {reason(error)}; the file is unchanged") from None
        return WriteResult(path, info is None)


class _Restart(Exception):
    def __init__(self, parts: list[str]) -> None:
        self.parts = parts


def _write_all(handle: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(handle, view)
        view = view[written:]


def _umask() -> int:
    mask = os.umask(0o22)
    os.umask(mask)
    return mask


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, in words ("a FIFO", "a character device", ...)."""
    return next((word for is_kind, word in _KINDS if is_kind(mode)), "not a regular file")
