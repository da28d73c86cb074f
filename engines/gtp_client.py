"""A small GTP client: drives any GTP engine (GNU Go, ours) as a subprocess.

    with GtpClient(["gnugo", "--mode", "gtp", "--level", "0"]) as gnugo:
        gnugo.send("boardsize 9")
        move = gnugo.send("genmove black")     # 'D5', 'pass' or 'resign'

`send` returns the reply's text after `= `, and raises `GtpError` (the
engine's message) for a `? ` reply. `find_binary` finds an engine on PATH or
in /usr/games (where Debian installs stockfish and gnugo).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import List, Optional

from engines.gtp import GtpError

EXTRA_DIRS = ("/usr/games", "/usr/local/games")


def find_binary(name: str) -> Optional[str]:
    """The path of the program `name` on PATH or in /usr/games; None if absent."""
    found = shutil.which(name)
    if found:
        return found
    for folder in EXTRA_DIRS:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    return None


class GtpClient:
    """A GTP engine started with `command` (a list, as for subprocess)."""

    def __init__(self, command: List[str], **popen_options):
        self.command = list(command)
        self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, **popen_options)

    def send(self, command: str) -> str:
        """Sends one command, returns its result; GtpError for `? message`."""
        if self.process.poll() is not None:
            raise RuntimeError(f"the GTP engine {self.command[0]} has exited "
                               f"(code {self.process.returncode})")
        self.process.stdin.write(command.strip() + "\n")
        self.process.stdin.flush()
        lines = []
        while True:
            line = self.process.stdout.readline()
            if line == "":
                raise RuntimeError(f"the GTP engine {self.command[0]} closed its output "
                                   f"after {command!r}")
            line = line.rstrip("\r\n")
            if line == "" and lines:
                break
            if line == "":
                continue
            lines.append(line)
        head, text = lines[0], "\n".join(lines)
        body = text[1:].lstrip("0123456789").lstrip(" ") if head[:1] in "=?" else text
        if head.startswith("?"):
            raise GtpError(body)
        if not head.startswith("="):
            raise RuntimeError(f"not a GTP reply to {command!r}: {text!r}")
        return body

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.send("quit")
                self.process.wait(timeout=30)
            except (RuntimeError, OSError, subprocess.TimeoutExpired, GtpError):
                self.process.kill()
                self.process.wait()

    def __enter__(self) -> "GtpClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


__all__ = ["GtpClient", "GtpError", "find_binary"]
