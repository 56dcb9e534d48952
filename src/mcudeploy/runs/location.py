"""Where the run store lives, and the git commit of the user's work.

Store location, first that applies:

1. ``--runs FILE`` on the command line;
2. the environment variable ``MCUDEPLOY_RUNS``;
3. ``.mcudeploy/runs.sqlite`` beside the project file (the first of
   :data:`PROJECT_FILE_NAMES` found in the current folder or one of its parents);
4. ``.mcudeploy/runs.sqlite`` in the current folder.

The git commit is ``git rev-parse HEAD`` run in the current folder, with a short timeout;
it is ``None`` outside a repository, without git, or when git is slow.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

PROJECT_FILE_NAMES = ("mcudeploy.toml",)   # the project file `mcudeploy init` writes
STORE_FOLDER = ".mcudeploy"
STORE_FILE = "runs.sqlite"
RUNS_ENV = "MCUDEPLOY_RUNS"
GIT_TIMEOUT_S = 1.0


def find_project_file(start: Path | None = None) -> Path | None:
    """The nearest project file in ``start`` (default: the current folder) or above."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        for name in PROJECT_FILE_NAMES:
            if (candidate / name).is_file():
                return candidate / name
    return None


def default_store_path(start: Path | None = None) -> Path:
    """The store used when ``--runs`` is not given (module docstring, rules 2-4)."""
    if os.environ.get(RUNS_ENV):
        return Path(os.environ[RUNS_ENV])
    project = find_project_file(start)
    folder = project.parent if project is not None else (start or Path.cwd())
    return folder / STORE_FOLDER / STORE_FILE


class GitCommit:
    """``git rev-parse HEAD`` in ``folder``, started now and read with :meth:`result`, so
    that the command runs while git does; no process at all outside a repository."""

    def __init__(self, folder: Path | None = None):
        folder = (folder or Path.cwd()).resolve()
        self._process = None
        if not any((candidate / ".git").exists() for candidate in (folder, *folder.parents)):
            return
        try:
            self._process = subprocess.Popen(["git", "rev-parse", "HEAD"], cwd=folder, stdout=subprocess.PIPE,
                                             stderr=subprocess.DEVNULL, text=True)
        except OSError:
            self._process = None

    def result(self) -> str | None:
        """The commit (40 hex digits), or ``None`` (no repository, no git, no commit, too slow)."""
        if self._process is None:
            return None
        try:
            output, _ = self._process.communicate(timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            return None
        commit = output.strip()
        return commit if self._process.returncode == 0 and len(commit) >= 40 else None


def git_commit(folder: Path | None = None) -> str | None:
    """``git rev-parse HEAD`` in ``folder``; ``None`` when it is not inside a repository."""
    return GitCommit(folder).result()
