"""Aider's repo map of a tree as one process, for `aider_speed.py`: run with the bench-only environment's Python
(`/work/aider-env/bin/python bench/aider_map.py ROOT FILES_LIST CACHE_DIR`), never with the project's; imports
nothing of lsp_hub.

`RepoMap(map_tokens=1024).get_repo_map(chat_files=[], other_files=FILES)`: the map aider puts in a chat without chat
files. Its tags cache (diskcache) is CACHE_DIR, absolute, so aider writes nothing into ROOT. Token counts are
len(text) / 4 (lsp-hub's estimate) instead of a model's tokenizer: aider needs a model for those, and loading one
(litellm) would only add to aider's time. Prints the map's length in characters on the last line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from aider.repomap import RepoMap
from aider_rank import QuietIO  # beside this file: a script's directory is on sys.path


class CharacterCountModel:
    """What RepoMap asks of a model: token counts, as lsp-hub estimates them."""

    def token_count(self, text: str) -> int:
        return len(text) // 4


def main() -> int:
    root, files_list, cache_dir = (Path(argument).resolve() for argument in sys.argv[1:4])
    RepoMap.TAGS_CACHE_DIR = str(cache_dir)
    files = [os.path.join(root, line) for line in files_list.read_text(encoding="utf-8").splitlines() if line]
    repo_map = RepoMap(map_tokens=1024, root=str(root), main_model=CharacterCountModel(), io=QuietIO())
    text = repo_map.get_repo_map([], files) or ""
    print(len(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
