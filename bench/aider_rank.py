"""Aider's repo-map ranking as a service for `relevance_cochange.py`: run with the bench-only environment's Python
(`/work/aider-env/bin/python bench/aider_rank.py CACHE_DIR`), never with the project's; imports nothing of lsp_hub.

Reads one JSON request a line on stdin, `{"root", "files", "chat", "text"}` (paths relative to root), and writes one
JSON line `{"ranked": [...]}` or `{"error": "..."}`: the files in the order of their first appearance in
`RepoMap.get_ranked_tags(chat_fnames=chat, other_fnames=files...)`, chat files left out, as aider's map would list
them. `text` plays the user's message: its words are the mentioned identifiers and the files it names the mentioned
files, as aider's coder derives them (`get_ident_mentions`, `get_file_mentions`, simplified: a file is mentioned when
its path or, if unique, its file name is a word of the text).
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from aider.repomap import RepoMap


class QuietIO:
    """What RepoMap asks of aider's InputOutput, without a terminal."""

    def tool_output(self, *_: object, **__: object) -> None:
        pass

    def tool_warning(self, *_: object, **__: object) -> None:
        pass

    def tool_error(self, *_: object, **__: object) -> None:
        pass

    def read_text(self, filename: str, silent: bool = False) -> str | None:
        try:
            return Path(filename).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None


def mentions(text: str, files: list[str]) -> tuple[set[str], set[str]]:
    words = {word for word in re.split(r"[^\w./-]+", text) if word}
    idents = {word for word in re.split(r"\W+", text) if word}
    names = Counter(os.path.basename(path) for path in files)
    mentioned = {
        path
        for path in files
        if path in words or (names[os.path.basename(path)] == 1 and os.path.basename(path) in words)
    }
    return mentioned, idents


def rank(repo_map: RepoMap, request: dict[str, Any]) -> list[str]:
    root = request["root"]
    repo_map.root = root
    files: list[str] = request["files"]
    chat: list[str] = request["chat"]
    mentioned_files, mentioned_idents = mentions(request.get("text", ""), files)
    tags = repo_map.get_ranked_tags(
        [os.path.join(root, path) for path in chat],
        [os.path.join(root, path) for path in files if path not in chat],
        mentioned_files,
        mentioned_idents,
    )
    seen: set[str] = set(chat)
    ranked: list[str] = []
    for tag in tags:
        path = tag[0]
        if path not in seen:
            seen.add(path)
            ranked.append(path)
    return ranked


def main() -> int:
    cache_dir = Path(sys.argv[1]).resolve()
    RepoMap.TAGS_CACHE_DIR = str(cache_dir)  # absolute, so `Path(root) / TAGS_CACHE_DIR` leaves the worktree alone
    repo_map = RepoMap(map_tokens=1024, root=os.getcwd(), main_model=None, io=QuietIO())
    for line in sys.stdin:
        try:
            answer: dict[str, Any] = {"ranked": rank(repo_map, json.loads(line))}
        except Exception as error:
            answer = {"error": f"{type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
