"""Runs the unit tests that ship inside mctx's wheel with mcts_jax as `mctx`.

Usage: python tests/mctx_wheel.py [--json OUT] [--library mcts_jax|mctx]
(tests/test_mctx_wheel.py runs it.)

The installed mctx carries its own test modules (`mctx/_src/tests/*_test.py`,
absltest TestCases). This runner executes them from their files, unchanged and
not copied, each module in a fresh Python process (several at once, --jobs)
that first puts mcts_jax into `sys.modules["mctx"]`, so every `import mctx`
and `mctx.<name>` in the module reaches mcts_jax. It works from the mctx package folder, so the relative test
data paths (`../mctx/_src/tests/test_data/...`) resolve, and applies the
settings of the module's `if __name__ == "__main__":` block (all but the
`absltest.main()` call), as when mctx runs the file itself.

Some tests call mctx's private modules (`from mctx._src import policies`, then
`policies._apply_temperature(...)`). mcts_jax cannot stand in for those, so
such a test is "not swappable": it is not run, and is reported with the private
names it uses. Which tests those are is decided from the source, before
anything runs: the module's syntax tree gives the names bound to `mctx._src`
(and any `mctx._<name>` reached directly); a test uses what its method body
uses, plus the fixtures of its class (setUp, ...) and the module's functions
and the class's methods it calls, followed transitively. Everything else runs.
The private modules a test module imports at the top are given placeholder
modules that raise PrivateMctxName when a name is read from them, so a module
that imports `policies` but has public-only tests still loads and runs those;
a test that touched a private name despite the analysis fails with that error.

`--library mctx` runs every test, private ones included, with mctx itself: a
check of the runner (everything should pass there).

Printed: one line per test (passed / FAILED with the error's last line / not
swappable with its reason) and the counts. `--json OUT` writes the same with
the tracebacks. The exit code is 1 when any test that ran failed or a module
could not be run, else 0.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import dataclasses
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import types
import unittest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRIVATE_PACKAGE = "mctx._src"
FIXTURES = ("setUp", "tearDown", "setUpClass", "tearDownClass", "asyncSetUp",
            "asyncTearDown")
MODULE_FIXTURES = ("setUpModule", "tearDownModule")


# ---------------------------------------------------------------------------
# The static analysis: which test uses which private name.


class PrivateMctxName(RuntimeError):
    """A test read a name from one of mctx's private modules (mctx._src...)."""


def _is_private_module(name: str | None) -> bool:
    return bool(name) and (name == PRIVATE_PACKAGE or name.startswith(PRIVATE_PACKAGE + "."))


def _is_private_attribute(attr: str) -> bool:
    return attr.startswith("_") and not (attr.startswith("__") and attr.endswith("__"))


@dataclasses.dataclass
class ModuleUses:
    """What a test module's source says about its use of mctx's private names."""

    private_modules: list[str]  # mctx._src modules it imports (placeholders needed)
    private_from_names: dict[str, list[str]]  # module -> names imported from it
    # "Class.method" or "function" -> private names its body uses (direct)
    direct: dict[str, list[str]]
    # "Class.method" or "function" -> the module's definitions it calls
    calls: dict[str, set[str]]
    class_bases: dict[str, list[str]]  # classes of the module -> their bases in it
    class_methods: dict[str, set[str]]
    load_time: list[str]  # private names used while the module loads

    def reasons(self, qualname: str) -> list[str]:
        """The private names the test `Class.method` uses, each with the path
        it is reached by ("via helper"), after the class and module fixtures."""
        cls = qualname.split(".")[0] if "." in qualname else None
        starts = [qualname]
        if cls is not None:
            for fixture in FIXTURES:
                defined = self.resolve_method(cls, fixture)
                if defined:
                    starts.append(defined)
        starts += [f for f in MODULE_FIXTURES if f in self.direct]
        found: dict[str, str] = {}
        seen: set[str] = set()
        queue = [(s, []) for s in starts]
        while queue:
            name, path = queue.pop(0)
            if name in seen or name not in self.direct:
                continue
            seen.add(name)
            here = path if name == qualname else path + [name]
            for private in self.direct[name]:
                found.setdefault(private, " via " + " > ".join(here) if here else "")
            for callee in sorted(self.calls.get(name, ())):
                queue.append((callee, here))
        return [p + via for p, via in found.items()]

    def resolve_method(self, cls: str, method: str) -> str | None:
        """`cls.method` as defined in the module (own class, then its bases
        defined in the module), or None if inherited from elsewhere."""
        todo, seen = [cls], set()
        while todo:
            c = todo.pop(0)
            if c in seen or c not in self.class_methods:
                continue
            seen.add(c)
            if method in self.class_methods[c]:
                return f"{c}.{method}"
            todo += self.class_bases.get(c, [])
        return None


class _BodyVisitor(ast.NodeVisitor):
    """Collects, in one function (nested functions and lambdas included), the
    private names it uses and the module-level names and `self.` / `cls.`
    attributes it reads (candidate calls)."""

    def __init__(self, private_bindings: dict[str, str], mctx_names: set[str]):
        self.private_bindings = private_bindings
        self.mctx_names = mctx_names
        self.private: list[str] = []
        self.names: set[str] = set()
        self.self_attributes: set[str] = set()

    def _record(self, text: str):
        if text not in self.private:
            self.private.append(text)

    def visit_Attribute(self, node: ast.Attribute):
        root = node
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name):
            if root.id in self.private_bindings:  # policies._x -> mctx._src.policies._x
                text = ast.unparse(node)
                self._record(self.private_bindings[root.id] + text[len(root.id):])
                return
            if root.id in self.mctx_names:
                chain, inner = [], node
                while isinstance(inner, ast.Attribute):
                    chain.append(inner.attr)
                    inner = inner.value
                if _is_private_attribute(chain[-1]):  # mctx._src..., mctx._x
                    self._record(ast.unparse(node))
                    return
            if root.id in ("self", "cls") and isinstance(node.value, ast.Name):
                self.self_attributes.add(node.attr)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name):
        if node.id in self.private_bindings:
            self._record(self.private_bindings[node.id])
        self.names.add(node.id)

    def visit_Call(self, node: ast.Call):
        # getattr(mctx, "_src") and the like
        if (isinstance(node.func, ast.Name) and node.func.id == "getattr" and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name) and node.args[0].id in self.mctx_names
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and _is_private_attribute(node.args[1].value)):
            self._record(ast.unparse(node))
        self.generic_visit(node)


def analyse(source: str) -> ModuleUses:
    """The private-name uses of a test module, from its source."""
    module = ast.parse(source)
    private_bindings: dict[str, str] = {}  # local name -> mctx._src qualified name
    private_modules: set[str] = set()
    private_from_names: dict[str, list[str]] = {}
    mctx_names: set[str] = set()  # local names bound to the mctx package itself
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            if _is_private_module(node.module):
                private_modules.add(node.module)
                for alias in node.names:
                    private_bindings[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    private_from_names.setdefault(node.module, []).append(alias.name)
            elif node.module == "mctx":
                for alias in node.names:
                    if _is_private_attribute(alias.name):
                        private_bindings[alias.asname or alias.name] = f"mctx.{alias.name}"
                        private_modules.add(f"mctx.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _is_private_module(alias.name):
                    private_modules.add(alias.name)
                    if alias.asname:
                        private_bindings[alias.asname] = alias.name
                    else:
                        mctx_names.add("mctx")
                elif alias.name == "mctx":
                    mctx_names.add(alias.asname or "mctx")
    # the parents of each private module need placeholders too
    for name in list(private_modules):
        parts = name.split(".")
        for i in range(2, len(parts)):
            private_modules.add(".".join(parts[:i]))

    direct: dict[str, list[str]] = {}
    names_read: dict[str, set[str]] = {}
    self_reads: dict[str, set[str]] = {}
    class_bases: dict[str, list[str]] = {}
    class_methods: dict[str, set[str]] = {}
    load_time = _BodyVisitor(private_bindings, mctx_names)

    def visit_function(key: str, fn):
        body = _BodyVisitor(private_bindings, mctx_names)
        for stmt in fn.body:
            body.visit(stmt)
        direct[key] = body.private
        names_read[key] = body.names
        self_reads[key] = body.self_attributes
        # decorators, defaults and annotations are evaluated as the module loads
        for expr in fn.decorator_list + [fn.args] + ([fn.returns] if fn.returns else []):
            load_time.visit(expr)

    module_level: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            visit_function(stmt.name, stmt)
            module_level.add(stmt.name)
        elif isinstance(stmt, ast.ClassDef):
            module_level.add(stmt.name)
            class_bases[stmt.name] = [b.id for b in stmt.bases if isinstance(b, ast.Name)]
            class_methods[stmt.name] = set()
            for expr in stmt.bases + stmt.keywords + stmt.decorator_list:
                load_time.visit(expr)
            for item in stmt.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    visit_function(f"{stmt.name}.{item.name}", item)
                    class_methods[stmt.name].add(item.name)
                else:
                    load_time.visit(item)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue  # the bindings themselves (placeholders make them load)
        elif _is_main_guard(stmt):
            for inner in _main_guard_setup(stmt):
                load_time.visit(inner)
        else:
            load_time.visit(stmt)

    calls: dict[str, set[str]] = {}
    uses = ModuleUses(sorted(private_modules), private_from_names, direct, calls, class_bases,
                      class_methods, load_time.private)
    for key in direct:
        cls = key.split(".")[0] if "." in key else None
        callees = {n for n in names_read[key] if n in module_level and n in direct}
        # a class named in the body: its methods run when it is used
        for n in names_read[key]:
            if n in class_methods:
                callees |= {f"{n}.{m}" for m in class_methods[n]}
        if cls is not None:
            for attr in self_reads[key]:
                found = uses.resolve_method(cls, attr)
                if found:
                    callees.add(found)
        callees.discard(key)
        calls[key] = callees
    return uses


def _is_main_guard(stmt) -> bool:
    return (isinstance(stmt, ast.If) and isinstance(stmt.test, ast.Compare)
            and isinstance(stmt.test.left, ast.Name) and stmt.test.left.id == "__name__"
            and len(stmt.test.comparators) == 1
            and isinstance(stmt.test.comparators[0], ast.Constant)
            and stmt.test.comparators[0].value == "__main__")


def _main_guard_setup(stmt: ast.If) -> list[ast.stmt]:
    """The statements of `if __name__ == "__main__":` but the test program call
    (`absltest.main()`, `unittest.main()`, `app.run(...)`)."""
    kept = []
    for inner in stmt.body:
        if (isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Call)
                and isinstance(inner.value.func, ast.Attribute)
                and inner.value.func.attr in ("main", "run")):
            continue
        kept.append(inner)
    return kept


# ---------------------------------------------------------------------------
# One module, in this (fresh) process.


class _PlaceholderModule(types.ModuleType):
    """Stands in for a private mctx module: importing it works, reading a name
    from it raises PrivateMctxName."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        raise PrivateMctxName(
            f"{self.__name__}.{name} is private to mctx; mcts_jax does not provide it "
            "(this test should have been reported as not swappable)")


class _PlaceholderName:
    """Stands in for `from mctx._src.x import name`: any use raises."""

    def __init__(self, qualified: str):
        self._qualified = qualified

    def _fail(self, *args, name=None, **kwargs):
        qualified = f"{self._qualified}.{name}" if name else self._qualified
        raise PrivateMctxName(f"{qualified} is private to mctx; mcts_jax does not provide it "
                              "(this test should have been reported as not swappable)")

    __call__ = __getitem__ = __iter__ = __bool__ = _fail

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        self._fail(name=name)


def _install_placeholders(uses: ModuleUses):
    for name in uses.private_modules:  # parents first (sorted)
        if name in sys.modules:
            continue
        module = _PlaceholderModule(name)
        module.__path__ = []  # a package: submodules resolve from sys.modules
        module.__spec__ = importlib.util.spec_from_loader(name, loader=None, is_package=True)
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent in sys.modules and isinstance(sys.modules[parent], _PlaceholderModule):
            setattr(sys.modules[parent], child, module)
    for module_name, names in uses.private_from_names.items():
        module = sys.modules[module_name]
        for name in names:
            if f"{module_name}.{name}" not in sys.modules:
                setattr(module, name, _PlaceholderName(f"{module_name}.{name}"))


class _Recorder(unittest.TestResult):
    """Keeps each test's outcome, its traceback and its duration."""

    def __init__(self):
        super().__init__()
        self.records: dict[str, dict] = {}
        self._started: dict[str, float] = {}

    def _set(self, test, status, err=None):
        record = self.records.setdefault(test.id(), {"status": "passed"})
        if status != "passed" or record["status"] == "passed":
            record["status"] = status
        if err is not None:
            text = self._exc_info_to_string(err, test) if isinstance(err, tuple) else str(err)
            record.setdefault("traceback", "")
            record["traceback"] += text

    def startTest(self, test):
        super().startTest(test)
        self._started[test.id()] = time.perf_counter()
        self.records.setdefault(test.id(), {"status": "passed"})

    def stopTest(self, test):
        super().stopTest(test)
        self.records[test.id()]["seconds"] = round(
            time.perf_counter() - self._started.pop(test.id()), 2)

    def addError(self, test, err):
        super().addError(test, err)
        if isinstance(test, unittest.suite._ErrorHolder):  # setUpClass / setUpModule
            self.records.setdefault(test.id(), {"status": "failed"})
            self.records[test.id()]["traceback"] = self._exc_info_to_string(err, test)
            self.records[test.id()]["status"] = "failed"
            return
        self._set(test, "failed", err)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._set(test, "failed", err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._set(test, "skipped", f"skipped: {reason}")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._set(test, "failed", "unexpected success of a test marked expectedFailure")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            self._set(test, "failed", err)


def _iter_tests(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _iter_tests(item)
        else:
            yield item


def _source_qualname(test) -> str | None:
    method = getattr(type(test), test._testMethodName, None)
    if method is None:
        return None
    return inspect.unwrap(method).__qualname__


def run_module(path: str, library: str, workdir: str) -> dict:
    """Loads the wheel's test module at `path` with `library` as mctx and runs
    its tests (the swappable ones, for mcts_jax)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    with open(path) as f:
        source = f.read()
    uses = analyse(source)
    if library == "mcts_jax":
        sys.path.insert(0, REPO_ROOT)  # this checkout's mcts_jax
        import mcts_jax
        sys.modules["mctx"] = mcts_jax
        _install_placeholders(uses)
    else:
        import mctx  # noqa: F401  (the real one: a check of the runner)
    try:
        from absl import flags
        if not flags.FLAGS.is_parsed():
            flags.FLAGS.mark_as_parsed()  # absltest reads its flags (test_tmpdir, ...)
    except ImportError:
        pass
    os.chdir(workdir)
    module_name = f"mctx_wheel_tests.{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    guard = [s for s in ast.parse(source).body if _is_main_guard(s)]
    if guard:
        setup = ast.Module(body=[s for g in guard for s in _main_guard_setup(g)], type_ignores=[])
        exec(compile(setup, path, "exec"), module.__dict__)

    records: dict[str, dict] = {}
    to_run = unittest.TestSuite()
    for test in _iter_tests(unittest.defaultTestLoader.loadTestsFromModule(module)):
        if type(test).__module__ != module_name:
            continue  # a TestCase imported from elsewhere
        test_id = f"{stem}.{type(test).__name__}.{test._testMethodName}"
        qualname = _source_qualname(test) or f"{type(test).__name__}.{test._testMethodName}"
        private = uses.load_time + uses.reasons(qualname)
        record = {"id": test_id, "module": stem, "source": qualname}
        if private and library == "mcts_jax":
            record["status"] = "not swappable"
            record["reason"] = "uses " + ", ".join(private) + " (private to mctx)"
        else:
            record["private"] = private
            to_run.addTest(test)
        records[test.id()] = record

    recorder = _Recorder()
    to_run.run(recorder)
    results = []
    for key, record in records.items():
        if "status" not in record:
            record.update(recorder.records.get(key, {"status": "failed",
                                                     "traceback": "the test did not run"}))
        if record["status"] == "failed":
            record["error"] = _last_line(record.get("traceback", ""))
        results.append(record)
    for key, record in recorder.records.items():  # class and module fixtures
        if key not in records:
            results.append({"id": f"{stem}.{key}", "module": stem, "status": "failed",
                            "traceback": record.get("traceback", ""),
                            "error": _last_line(record.get("traceback", ""))})
    return {"module": stem, "tests": results}


def _last_line(text: str, limit: int = 300) -> str:
    """The exception of a traceback on one line: its `Type: message` line and
    the message's further lines, joined, cut to `limit` characters."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    start = max((i for i, line in enumerate(lines)
                 if re.match(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Failure|Name)\b",
                             line)), default=len(lines) - 1)
    one_line = " | ".join(line.strip() for line in lines[start:])
    return one_line if len(one_line) <= limit else one_line[:limit - 3] + "..."


# ---------------------------------------------------------------------------
# All modules, each in its own process.


def wheel_tests_dir() -> tuple[str, str, str]:
    """(tests folder, mctx package folder, mctx version), found without
    importing mctx."""
    spec = importlib.util.find_spec("mctx")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("mctx is not installed (pip install mctx==0.0.71)")
    package = list(spec.submodule_search_locations)[0]
    version = "?"
    try:
        from importlib import metadata
        version = metadata.version("mctx")
    except Exception:  # noqa: BLE001  (a wheel without metadata still runs)
        pass
    return os.path.join(package, "_src", "tests"), package, version


def run_all(library: str, jobs: int | None = None) -> dict:
    tests_dir, package, version = wheel_tests_dir()
    paths = sorted(os.path.join(tests_dir, f) for f in os.listdir(tests_dir)
                   if f.endswith("_test.py"))

    def run_one(path: str) -> list[dict]:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "module.json")
            done = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--module", path, "--library",
                 library, "--workdir", package, "--json", out],
                capture_output=True, text=True)
            if done.returncode == 0 and os.path.exists(out):
                with open(out) as f:
                    return json.load(f)["tests"]
        stem = os.path.splitext(os.path.basename(path))[0]
        tail = (done.stderr or done.stdout)[-4000:]
        return [{"id": f"{stem} (module)", "module": stem, "status": "failed",
                 "traceback": tail, "error": _last_line(tail)}]

    # The largest modules (most searches to compile) start first.
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths)))
    order = sorted(paths, key=lambda p: -os.path.getsize(p))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        done_by_path = dict(zip(order, pool.map(run_one, order)))
    results = [r for path in paths for r in done_by_path[path]]
    counts = {status: sum(r["status"] == status for r in results)
              for status in ("passed", "failed", "not swappable", "skipped")}
    return {"mctx_version": version, "tests_dir": tests_dir, "library": library,
            "total": len(results), **counts, "tests": results}


def report(summary: dict) -> str:
    lines = [f"mctx {summary['mctx_version']} wheel tests ({summary['tests_dir']}) "
             f"with {summary['library']} as mctx"]
    for r in summary["tests"]:
        if r["status"] == "passed":
            lines.append(f"  passed         {r['id']}")
        elif r["status"] == "not swappable":
            lines.append(f"  not swappable  {r['id']}: {r['reason']}")
        else:
            lines.append(f"  {r['status'].upper():<14} {r['id']}: {r.get('error', '')}")
    lines.append(f"passed {summary['passed']}, failed {summary['failed']}, "
                 f"not swappable {summary['not swappable']}, skipped {summary['skipped']}, "
                 f"total {summary['total']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the results, tracebacks included, here")
    parser.add_argument("--library", choices=("mcts_jax", "mctx"), default="mcts_jax",
                        help="the module that `import mctx` gives the tests")
    parser.add_argument("--jobs", type=int, default=None,
                        help="modules run at once, each in its own process (default: one per core)")
    parser.add_argument("--module", help=argparse.SUPPRESS)  # internal: one module
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.module:
        result = run_module(args.module, args.library, args.workdir)
        with open(args.json, "w") as f:
            json.dump(result, f)
        return 0
    summary = run_all(args.library, args.jobs)
    print(report(summary), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1)
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
