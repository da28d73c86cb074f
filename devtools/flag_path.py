"""The calls and files a train.py flag passes through to reach its use.

    python -m devtools.flag_path                                  # --dirichlet-fraction
    python -m devtools.flag_path --flag dirichlet_fraction --value 0.123 \\
        -- --game tic_tac_toe --policy alphazero                  # train.py's flags

Runs `train.main` with the flag set to a marker value (in a temporary run
folder) under `sys.setprofile` and stops at the flag's use: the first call
into the search core (`mcts_jax/`) with the marker among its arguments (for
`--dirichlet-fraction`, the policy's constructor). The path is what the
application (train.py and training/) does with the value on the way:

  handed on  the functions that returned it (the parsed flags, the settings
             dict, the config, a record), in the order they returned;
  on stack   the frames on the stack at its use, outermost first, each with
             the types of its arguments that hold the value (the whole
             TrainConfig, a record, the number itself).

A call counts once (its file and function); the files are those of the
counted calls. It prints; it writes no results file (a property of the code:
measure another commit's checkout with --checkout, e.g. after
`mkdir /tmp/old && git archive <commit> | tar -x -C /tmp/old`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from typing import Any, List, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Reached(Exception):
    """Raised by the profiler at the flag's use, ending the run."""


def carries(value: Any, field: str, marker: float, depth: int = 0) -> bool:
    """Whether `value` holds the marker: the number itself, in a container,
    or as the `field` attribute or a dataclass field of a record."""
    if isinstance(value, float):
        return value == marker
    if depth > 3 or isinstance(value, (str, bytes, int, bool)) or value is None:
        return False
    if isinstance(value, dict):
        return any(carries(v, field, marker, depth + 1) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(carries(v, field, marker, depth + 1) for v in value)
    if isinstance(value, argparse.Namespace):
        return carries(vars(value), field, marker, depth + 1)
    try:
        if getattr(value, field, None) == marker:
            return True
    except Exception:  # a property that fails on this object
        return False
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(carries(getattr(value, f.name, None), field, marker, depth + 1)
                   for f in dataclasses.fields(value))
    return False


def _where(frame) -> Tuple[str, str]:
    path = os.path.relpath(os.path.abspath(frame.f_code.co_filename), ROOT)
    return path, frame.f_code.co_qualname if hasattr(frame.f_code, "co_qualname") \
        else frame.f_code.co_name


def _application(path: str, name: str = "") -> bool:
    """train.py and training/, not their comprehensions (part of the call
    that runs them)."""
    return ((path == "train.py" or path.startswith("training" + os.sep))
            and not name.endswith(("<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>")))


def _carriers(frame, field: str, marker: float) -> str:
    """The types of the frame's arguments that hold the marker ("self"'s
    included): what the call was given to reach the value through."""
    code = frame.f_code
    count = code.co_argcount + code.co_kwonlyargcount
    count += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
    values = [frame.f_locals.get(name) for name in code.co_varnames[:count]]
    return ", ".join(sorted({type(v).__name__ for v in values if carries(v, field, marker)}))


def flag_path(field: str, marker: float, train_args: List[str]):
    """(handed_on, on_stack, use): lists of (file, function) and the use's
    (file, function) in the core."""
    sys.path.insert(0, ROOT)
    import train  # noqa: E402  (the checkout's train.py)

    handed_on: List[Tuple[str, str]] = []
    found: List[Any] = []

    def profile(frame, event, arg):
        if found:
            return
        path, name = _where(frame)
        if event == "return" and _application(path, name) and carries(arg, field, marker):
            if (path, name) not in handed_on:
                handed_on.append((path, name))
        elif event == "call" and path.startswith("mcts_jax" + os.sep):
            arguments = frame.f_locals
            if any(carries(v, field, marker) for k, v in arguments.items() if k != "self"):
                stack, outer = [], frame.f_back
                while outer is not None:
                    where = _where(outer)
                    if _application(*where):
                        stack.append(where + (_carriers(outer, field, marker),))
                    outer = outer.f_back
                found.append((stack[::-1], (path, name)))
                raise _Reached

    with tempfile.TemporaryDirectory() as folder:
        argv = list(train_args) + ["--" + field.replace("_", "-"), repr(marker),
                                   "--run-dir", os.path.join(folder, "run"), "--no-progress"]
        sys.setprofile(profile)
        try:
            train.main(argv)
        except _Reached:
            pass
        finally:
            sys.setprofile(None)
    if not found:
        raise SystemExit(f"the marker {marker} of --{field} never reached mcts_jax")
    on_stack, use = found[0]
    handed_on = [w for w in handed_on if w not in [frame[:2] for frame in on_stack]]
    return handed_on, on_stack, use


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flag", default="dirichlet_fraction", help="TrainConfig field")
    parser.add_argument("--value", type=float, default=0.123456,
                        help="marker value the flag is set to (unlike any default)")
    parser.add_argument("--checkout", default=None,
                        help="another checkout to measure (its train.py and training/; "
                             "default: this one)")
    parser.add_argument("train_args", nargs="*",
                        help="train.py's other flags (after --); default: tic-tac-toe, "
                             "--policy alphazero")
    args = parser.parse_args(argv)
    if args.checkout:
        global ROOT
        ROOT = os.path.realpath(args.checkout)
    train_args = args.train_args or ["--game", "tic_tac_toe", "--policy", "alphazero"]
    handed_on, on_stack, use = flag_path(args.flag, args.value, train_args)
    calls = handed_on + [frame[:2] for frame in on_stack]
    files = sorted({path for path, _ in calls})
    print(f"--{args.flag.replace('_', '-')} ({' '.join(train_args)}): {len(calls)} calls in "
          f"{len(files)} files to its use, {use[0]}:{use[1]}")
    print("  handed on (returned it):")
    for path, name in handed_on:
        print(f"    {path}: {name}")
    print("  on the stack at its use (the arguments that hold it):")
    for path, name, carriers in on_stack:
        print(f"    {path}: {name} ({carriers or 'none: a local it made'})")
    print(f"  files: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
