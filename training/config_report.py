"""Where the training config is read: a count from the code's syntax tree.

    python -m training.config_report                      # every file, every field
    python -m training.config_report --field dirichlet_fraction

Reads the Python files of the repository (not tests/) with `ast`, nothing is
run. A read is an attribute `<holder>.<field>` where `<field>` is a
`TrainConfig` field and `<holder>` is a name or attribute called `config`
(`config.num_games`, `run.config.num_games`); a receiver is a function with
a parameter called `config`; a record read is `records.<concern>`
(`config.records.search`: the concern's record, `TrainConfig.records`). The figures are what issue 65 measured the
config's spread with: how many files read it, how many reads, and, for one
field, which files and functions read it.
"""

from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import os
from typing import Dict, Iterator, List, Tuple

from training import config as config_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIPPED = {"tests", ".git", "runs", "notebooks", "__pycache__"}


def python_files(root: str = ROOT) -> Iterator[str]:
    """The repository's .py files outside `SKIPPED`, relative to `root`."""
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d not in SKIPPED)
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(folder, name), root)


def _holder_named(node: ast.expr, holder: str) -> bool:
    """`node` is the name `holder` or an attribute called so (`run.config`)."""
    if isinstance(node, ast.Name):
        return node.id == holder
    return isinstance(node, ast.Attribute) and node.attr == holder


def attribute_reads(source: str, holder: str, names: frozenset) -> List[Tuple[str, str]]:
    """[(function, name)] of every `<holder>.<name>` in `source` with `name`
    in `names` (function "<module>" outside any function)."""
    reads: List[Tuple[str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = function
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = child.name if function == "<module>" else f"{function}.{child.name}"
            if (isinstance(child, ast.Attribute) and child.attr in names
                    and _holder_named(child.value, holder)):
                reads.append((function, child.attr))
            visit(child, name)

    visit(ast.parse(source), "<module>")
    return reads


def config_reads(source: str, fields: frozenset) -> List[Tuple[str, str]]:
    """[(function, field)] of every `config.<field>` read in `source`."""
    return attribute_reads(source, "config", fields)


def record_reads(source: str) -> List[Tuple[str, str]]:
    """[(function, concern)] of every `records.<concern>` in `source` (the
    config's records, `TrainConfig.records`: `config.records.search`,
    `self.records.game`)."""
    concerns = frozenset(f.name for f in dataclasses.fields(config_lib.Records))
    return attribute_reads(source, "records", concerns)


def config_receivers(source: str) -> List[Tuple[str, str]]:
    """[(function, annotation)] of the functions of `source` with a parameter
    called `config` (annotation "" when it has none): `TrainConfig` is the
    whole config, `EvaluationConfig` or `NetworkConfig` one concern's record."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in node.args.args + node.args.kwonlyargs:
                if arg.arg == "config":
                    out.append((node.name, ast.unparse(arg.annotation).strip("'\"")
                                if arg.annotation is not None else ""))
    return out


def report(root: str = ROOT) -> Dict[str, Dict[str, object]]:
    """{file: {"reads": [(function, field)], "receivers": [(function,
    annotation)], "records": [(function, concern)]}} of the files that read a
    config field, receive a config or read its records."""
    fields = frozenset(f.name for f in dataclasses.fields(config_lib.TrainConfig))
    out: Dict[str, Dict[str, object]] = {}
    for path in python_files(root):
        with open(os.path.join(root, path)) as f:
            source = f.read()
        reads, receivers = config_reads(source, fields), config_receivers(source)
        records = record_reads(source)
        if reads or receivers or records:
            out[path] = dict(reads=reads, receivers=receivers, records=records)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--field", default=None,
                        help="list the files and functions that read this TrainConfig field")
    args = parser.parse_args(argv)
    found = report()
    fields = len(dataclasses.fields(config_lib.TrainConfig))
    total = sum(len(entry["reads"]) for entry in found.values())
    reading = [path for path, entry in found.items() if entry["reads"]]
    whole = {path: [name for name, annotation in entry["receivers"]
                    if annotation == "TrainConfig"] for path, entry in found.items()}
    print(f"TrainConfig: {fields} fields; {total} reads in {len(reading)} files; "
          f"{sum(len(names) for names in whole.values())} functions in "
          f"{sum(1 for names in whole.values() if names)} files take the whole TrainConfig")
    print(f"  {'file':<40} {'reads':>5} {'fields':>6}  config parameters (annotation); "
          f"records read")
    for path, entry in found.items():
        kinds = collections.Counter(annotation or "?" for _, annotation in entry["receivers"])
        concerns = sorted(set(concern for _, concern in entry["records"]))
        print(f"  {path:<40} {len(entry['reads']):>5} "
              f"{len(set(f for _, f in entry['reads'])):>6}  "
              f"{', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}"
              + (f"; records: {', '.join(concerns)}" if concerns else ""))
    if args.field:
        where = collections.Counter((path, function) for path, entry in found.items()
                                    for function, field in entry["reads"] if field == args.field)
        files = {path for path, _ in where}
        print(f"{args.field}: {sum(where.values())} reads in {len(where)} functions of "
              f"{len(files)} files")
        for (path, function), count in sorted(where.items()):
            print(f"  {path}: {function} ({count})")


if __name__ == "__main__":
    main()
