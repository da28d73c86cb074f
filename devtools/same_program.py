"""Does this tree compile the same search programs as an earlier commit?

A change meant to move code without changing what runs (a redesign, a
feature turned into a plug-in) is fastest proven by its compiled programs:
where XLA's optimised program of a search is instruction for instruction the
same before and after, its speed is the same by construction, whatever a
noisy timing says. For each cell (a policy with its options, on a synthetic
hashed problem: B = 32, A = 16, 32 simulations), a fresh process per side
compiles the search with `jax.jit(...).lower(...).compile()` and keeps the
instructions of its optimised HLO (`as_text()`, without the metadata and the
source-location tables, which name files and functions). The report says per
cell whether the two are identical, whether they are the same up to a
consistent renaming of instructions and computations (`same_up_to_names`:
XLA names an instruction after the Python function it was traced in, so a
function inlined or renamed renames instructions and nothing else), and how
many instruction lines differ once instruction names are numbered alike.

    python -m devtools.same_program --before 8acb5d8
    python -m devtools.same_program --before 8acb5d8 --cells alphazero gumbel

Results: devtools/results/<name>-<device>.json (commit, command).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

from benchmarks import harness

# The cells: name -> (policy class, options). Read by the child process.
CELLS = {
    "uct": ("UCTPolicy", {}),
    "alphazero": ("AlphaZeroPolicy", {}),
    "gumbel": ("GumbelPolicy", {}),
    "muzero": ("MuZeroPolicy", {}),
    "alphazero_p4": ("AlphaZeroPolicy", {"simulations_per_step": 4}),
    "alphazero_solver": ("AlphaZeroPolicy", {"solver": True}),
    "uct_compact8": ("UCTPolicy", {"max_children": 8}),
    "uct_expand_all": ("UCTPolicy", {"expand_all": True}),
    "alphazero_graph": ("AlphaZeroPolicy", {"transpositions": True}),
    "alphazero_replay": ("AlphaZeroPolicy", {"replay_embeddings": True}),
}

CHILD = r"""
import json, re, sys
library, cells_json, out_path = sys.argv[1:4]
sys.path.insert(0, library)
import jax
import mcts_jax
from mcts_jax.synthetic import HashedProblem, random_root_codes
assert mcts_jax.__file__.startswith(library), mcts_jax.__file__
problem = HashedProblem(num_actions=16, illegal_eighths=1, terminal_sixteenths=2)
root, illegal = problem.root(random_root_codes(0, 32))
programs = {}
for name, (kind, options) in json.loads(cells_json).items():
    policy = getattr(mcts_jax, kind).make(**options)

    def search(key, root, illegal):
        out = policy(None, key, root, problem.recurrent_fn, 32, invalid_actions=illegal)
        return out.action, out.action_weights, out.search_tree
    text = jax.jit(search).lower(jax.random.key(0), root, illegal).compile().as_text()
    programs[name] = [re.sub(r", metadata=\{[^}]*\}", "", line) for line in text.splitlines()
                      if (" = " in line or line.startswith(("ENTRY", "%")))
                      and not re.match(r"^\s*\d+ ", line)]
json.dump(programs, open(out_path, "w"))
"""


def programs_of(library: str, cells: dict, folder: str, side: str) -> dict:
    out = os.path.join(folder, f"{side}.json")
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    subprocess.run([sys.executable, "-c", CHILD, library, json.dumps(cells), out], check=True,
                   env=env, cwd=folder)
    with open(out) as handle:
        return json.load(handle)


def numbered_alike(lines):
    """Instruction lines with every `%name.N` and `name.N` suffix dropped
    (and the number of a `region_N` computation), so a renumbering alone is
    no difference."""
    return [re.sub(r"\bregion_\d+", "region", re.sub(r"([%\w\-]+)\.\d+\b", r"\1", line))
            for line in lines]


_NAME = re.compile(r"%([\w.\-]+)")


def named_alike(lines):
    """Instruction lines with every instruction and computation name replaced
    by its order of definition (`%n0`, `%n1`, ...; a name is defined where a
    line starts `%name = `, `ROOT %name = `, `%name (` or `ENTRY %name`),
    everywhere it appears as `%name`: two programs equal after this are one program under a
    consistent renaming (XLA names instructions after the Python functions
    they were traced in, so renaming or inlining a function renames them)."""
    order = {}
    for line in lines:
        match = re.match(r"^\s*(?:ENTRY\s+|ROOT\s+)?%([\w.\-]+)", line)
        if match and match.group(1) not in order:
            order[match.group(1)] = f"%n{len(order)}"
    return [_NAME.sub(lambda match: order.get(match.group(1), match.group(0)), line)
            for line in lines]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="the earlier commit")
    parser.add_argument("--cells", nargs="*", default=list(CELLS), choices=list(CELLS))
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--name", default="same_program")
    parser.add_argument("--show-diff", action="store_true",
                        help="print each cell's differing lines (numbered alike)")
    args = parser.parse_args(argv)
    cells = {name: CELLS[name] for name in args.cells}
    with tempfile.TemporaryDirectory() as folder:
        before_dir = os.path.join(folder, "before")
        os.makedirs(before_dir)
        archive = os.path.join(folder, "before.tar")
        # The library and the fixtures its shims forward to (mcts_jax.synthetic
        # imports problems.synthetic), where the earlier commit has them.
        listed = subprocess.run(["git", "ls-tree", "--name-only", args.before], check=True,
                                capture_output=True, text=True, cwd=harness.REPOSITORY)
        folders = [name for name in ("mcts_jax", "problems") if name in listed.stdout.split()]
        subprocess.run(["git", "archive", "-o", archive, args.before, *folders], check=True,
                       cwd=harness.REPOSITORY)
        with tarfile.open(archive) as tar:
            tar.extractall(before_dir, filter="data")
        before = programs_of(before_dir + os.sep, cells, folder, "before")
        after = programs_of(harness.REPOSITORY + os.sep, cells, folder, "after")
    rows = []
    for name in cells:
        a, b = before[name], after[name]
        renumbered_diff = [line for line in difflib.unified_diff(
            numbered_alike(a), numbered_alike(b), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        if args.show_diff and renumbered_diff:
            print(f"{name}:", *renumbered_diff, sep="\n  ")
        rows.append(dict(cell=name, identical=a == b,
                         same_up_to_names=named_alike(a) == named_alike(b),
                         instructions_before=len(a), instructions_after=len(b),
                         lines_differing_renumbered=len(renumbered_diff)))
    print(f"compiled programs, this tree against {args.before}:")
    print(harness.markdown_table(list(rows[0]), rows))
    if not args.no_save:
        settings = dict(harness.provenance(), before=args.before, batch_size=32,
                        num_actions=16, simulations=32)
        print(f"wrote {harness.save(args.name, rows, settings)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
