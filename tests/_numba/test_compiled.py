"""dyn's kernel cache (dynlib._numba: folder, cache, sources, entries, symbols, linking, probes, events, lean) --
where it lives, how it loads, and what happens when it cannot be used (damaged files, a full or read-only
disk, a numba whose internals changed).

Commands run in subprocesses with a private cache folder, so that nothing here
changes the cache the rest of the suite uses; most start from a copy of the
warm cache, so that only the kernel a test is about gets compiled.
"""
import ctypes
import errno
import io
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest

from dynlib._numba import cache, entries, events, sources, symbols
from dynlib._numba import folder as dyn_folder
from helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
PENDULUM = ROOT / "robots" / "double_pendulum.urdf"
CACHE_VARS = ("DYN_CACHE_DIR", "NUMBA_CACHE_DIR", "XDG_CACHE_HOME")

# run one dyn command in this interpreter, then print what the kernel cache did (JSON, last line of stdout)
RUN_DYN = """
import json, sys
{patch}
from cli.main import dyn
code = 0
try:
    dyn(sys.argv[1:], prog_name="dyn")
except SystemExit as exc:
    code = exc.code
from dynlib._numba import entries, probes
print(json.dumps({{"code": code, "stats": entries.stats, "boundary": probes.boundary(),
                  "modules": [m for m in ("numba.np.arraymath", "scipy.linalg") if m in sys.modules]}}))
"""


def env_with(**values):
    """This process's environment without the cache variables, with dyn's sources first
    on the path and `values` set (None: left out)."""
    env = {k: v for k, v in os.environ.items() if k not in CACHE_VARS}
    env["PYTHONPATH"] = os.pathsep.join([str(values.pop("source", ROOT))] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env.update({k: str(v) for k, v in values.items() if v is not None})
    return env


def run_dyn(args, env, patch="", cwd=None, **kw):
    """(returncode, report of the cache or None, stderr) of `dyn ARGS` run in a fresh interpreter."""
    r = subprocess.run([sys.executable, "-c", RUN_DYN.format(patch=textwrap.dedent(patch)), *map(str, args)],
                       env=env, cwd=cwd or ROOT, capture_output=True, text=True, timeout=900, **kw)
    lines = r.stdout.strip().splitlines()
    report = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None
    return r.returncode, report, r.stderr


def warnings_in(stderr):
    return [line for line in stderr.splitlines() if line.startswith("dyn: warning:")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A short trajectory of the double pendulum and its inverse dynamics, written by commands
    that use (and fill) the suite's own cache: the kernels of `dyn inverse` are then warm."""
    folder = tmp_path_factory.mktemp("reference")
    for args in (["simulate", PENDULUM, "--steps", "40", "-o", folder / "traj.csv"],
                 ["inverse", PENDULUM, folder / "traj.csv", "--derivatives", "given", "-o", folder / "tau.csv"]):
        r = invoke(*args, cwd=ROOT)  # in this process: its cache folder is the suite's
        assert r.returncode == 0, r.stderr
    return folder


def inverse_args(reference, out):
    return ["inverse", PENDULUM, reference / "traj.csv", "--derivatives", "given", "-o", out]


@pytest.fixture
def warm_copy(tmp_path, reference):
    """A private cache root holding a copy of the warm cache folder."""
    root = tmp_path / "cache"
    # not an entry another test process is saving at this moment (its temporary file)
    shutil.copytree(dyn_folder.cache_folder(), root / dyn_folder.cache_folder().name,
                    ignore=shutil.ignore_patterns("*.tmp.*"))
    return root


def kernel_files(folder, name):
    """The index and data files of the dynlib kernel `name` (e.g. 'rnea.rnea_batch')."""
    files = sorted(Path(folder).rglob(f"{name}-*.nb[ic]"))
    assert files, f"no cached {name} in {folder}"
    return files


# ---------------------------------------------------------------- where the cache is


def test_the_folder_is_keyed_by_dyn_its_sources_numba_and_python():
    folder = dyn_folder.cache_folder()
    version, digest, numba_part, py = folder.name.split("-")
    assert version == dynlib_version()
    assert digest == sources.sources_hash()[:12]
    assert numba_part == f"numba{numba.__version__}"
    assert py == f"py{sys.version_info[0]}{sys.version_info[1]}"
    assert dyn_folder._FOLDER_NAME.fullmatch(folder.name)


def dynlib_version():
    import dynlib

    return dynlib.__version__


def _folder_name():
    sources.kernel_sources.cache_clear()
    sources.sources_hash.cache_clear()
    return dyn_folder.cache_folder().name


@pytest.fixture
def dynlib_copy(tmp_path, monkeypatch):
    """A copy of dynlib's sources that `dynlib._numba.sources` hashes instead of the real ones."""
    pkg = tmp_path / "dynlib"
    shutil.copytree(sources._HERE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(sources, "_HERE", pkg)
    yield pkg
    sources.kernel_sources.cache_clear()
    sources.sources_hash.cache_clear()


def _append(path, text="\n# edit\n"):
    path.write_text(path.read_text() + text)


KERNEL_EDITS = {
    "a kernel": lambda pkg: _append(pkg / "algorithms" / "rnea.py"),
    "the spatial helpers": lambda pkg: _append(pkg / "core/spatial.py"),
    "the simulation loop": lambda pkg: _append(pkg / "sim/simulate.py"),
    "a module the kernels import (errors)": lambda pkg: _append(pkg / "errors.py"),
    "the kernels' records (model)": lambda pkg: _append(pkg / "core/model.py"),
    "the cache itself": lambda pkg: _append(pkg / "_numba/entries.py"),
    "the decorators": lambda pkg: _append(pkg / "_numba/decorators.py"),
    "a new kernel module": lambda pkg: (pkg / "sim" / "contact" / "new.py").write_text(
        "from ..._numba.decorators import kernel\n\n\n@kernel\ndef f(x):\n    return x\n"),
    "a new module a kernel module imports": lambda pkg: (
        (pkg / "core" / "helper_new.py").write_text("C = 2.0\n"),
        _append(pkg / "core/joints.py", "\nfrom .helper_new import C  # noqa\n")),
    "a new numba module": lambda pkg: (pkg / "sim" / "contact" / "new.py").write_text("from numba import njit\n"),
}


@pytest.mark.parametrize("edit", KERNEL_EDITS, ids=list(KERNEL_EDITS))
def test_an_edit_to_what_compiled_code_is_made_of_is_another_folder(dynlib_copy, edit):
    before = _folder_name()
    KERNEL_EDITS[edit](dynlib_copy)
    assert _folder_name() != before


OTHER_EDITS = ("runs/view/page.py", "runs/view/__init__.py", "runs/scenario/messages.py", "runs/scenario/schema.py",
               "runs/sweep/records.py", "files/trajectory/csv.py", "files/trajectory/__init__.py",
               "files/recordings/bags.py", "files/recordings/rostopic.py", "files/output.py", "runs/checks.py",
               "motion/identification/__init__.py", "files/urdf.py", "files/figures.py", "__init__.py")


def test_an_edit_elsewhere_keeps_the_folder(dynlib_copy):
    names, _ = sources.kernel_sources()
    assert not set(OTHER_EDITS) & set(names)
    before = _folder_name()
    for rel in OTHER_EDITS:
        _append(dynlib_copy / rel)
    (dynlib_copy / "runs" / "view" / "new.py").write_text("import numpy\n")  # a new module no kernel module imports
    assert _folder_name() == before


def test_the_kernel_sources_are_what_defines_and_feeds_the_kernels():
    names, texts = sources.kernel_sources()
    for rel in ("_numba/decorators.py", "_numba/entries.py", "_numba/symbols.py", "core/spatial.py", "core/joints.py",
                "core/model.py", "sim/simulate.py", "sim/stages.py", "sim/integrators.py",
                "algorithms/rnea.py", "algorithms/aba.py", "_numba/one.py", "sim/contact/unilateral.py"):
        assert rel in names
    for rel in names:
        assert texts[rel] == (sources._HERE / rel).read_bytes()


def test_the_import_statements_are_found_where_the_pattern_finds_them():
    """sources._import_statements tries the pattern at line starts only: the same matches as a scan of the
    whole text, on every dynlib source and on the edge cases (a first line, a list in parentheses whose lines
    begin with 'import', CRLF line ends, indented imports)."""
    texts = [p.read_text(encoding="utf-8") for p in sources._HERE.rglob("*.py")]
    texts += ["from .a import b\nimport c", "x = 1\nfrom . import (\nimport_this,\nimport x)\nimport numba\n",
              "if x:\n    import numba\nfrom\t.b import c  # note\r\nimport d\r\n", "fromage = 1\nimportant = 2\n"]
    for text in texts:
        found = [m.span() for m in sources._import_statements(text)]
        assert found == [m.span() for m in sources._IMPORT.finditer(text)]


def _numba_records(t, seen):
    """The classes of the records (NamedTuples) inside numba type `t`."""
    from numba.core import types

    if t in seen:
        return
    seen.add(t)
    if isinstance(t, (types.NamedTuple, types.NamedUniTuple)):
        yield t.instance_class
    for attr in ("types", "dtype", "key"):
        inner = getattr(t, attr, None)
        for u in inner if isinstance(inner, tuple) else (inner,):
            if isinstance(u, types.Type):
                yield from _numba_records(u, seen)


def test_every_record_a_kernel_was_compiled_for_is_defined_in_a_kernel_source():
    """numba keys a cached kernel on its argument types, a record's class by name: the module that defines a
    record's fields must be part of the hash, or an edit to the fields would load code compiled for the old
    ones. Checked on every kernel this process has compiled or loaded (the suite's warm-up: dynamics, the
    simulation loop), after a contact simulation and an inverse dynamics call."""
    import numpy as np
    from numba.core.registry import CPUDispatcher

    import dynlib

    m = dynlib.load(ROOT / "robots" / "quadruped.urdf", floating_base=True)
    dynlib.simulate(m, dt=1e-3, steps=2, contacts={"model": "unilateral"}, integrator="semi-implicit")
    dynlib.rnea(m, m.q_neutral, np.zeros(m.nv), np.zeros(m.nv))
    names = set(sources.kernel_sources()[0])
    checked, seen = 0, set()
    for module in [mod for name, mod in sys.modules.items() if name.startswith("dynlib")]:
        for value in list(vars(module).values()):
            if not isinstance(value, CPUDispatcher):
                continue
            for sig in value.signatures:
                for arg in sig:
                    for cls in _numba_records(arg, seen):
                        rel = Path(sys.modules[cls.__module__].__file__).resolve().relative_to(sources._HERE)
                        assert rel.as_posix() in names, f"{value.py_func.__qualname__} takes {cls.__qualname__}"
                        checked += 1
    assert checked > 10


def test_compile_time_code_imports_nothing_inside_its_body():
    """An overload's implementation runs while numba compiles a kernel: a name it imported inside its body
    would feed compiled code from a module outside `kernel_sources`. Every such import is at module level."""
    import ast

    names, texts = sources.kernel_sources()
    for rel in names:
        for node in ast.walk(ast.parse(texts[rel])):
            if not isinstance(node, ast.FunctionDef):
                continue
            decorators = [ast.unparse(d) for d in node.decorator_list]
            if any(d.startswith(("overload", "intrinsic", "lower_builtin", "type_callable")) for d in decorators):
                inner = [n for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))]
                assert not inner, f"{rel}:{inner[0].lineno}: an import inside {node.name}, which numba runs"


def test_an_edit_outside_the_kernels_keeps_every_cached_kernel(tmp_path, warm_copy):
    """A checkout whose only change is to a module no kernel is made of (here the view's page) runs `dyn
    simulate` and `dyn inverse` from the warm cache: nothing compiled, no notice."""
    site = tmp_path / "site"
    for top in ("dynlib", "cli"):
        shutil.copytree(ROOT / top, site / top, ignore=shutil.ignore_patterns("__pycache__"))
    _append(site / "dynlib" / "runs" / "view" / "page.py", "\nEDITED = True\n")
    _append(site / "cli" / "info.py", "\nEDITED = True\n")
    env = env_with(source=site, DYN_CACHE_DIR=warm_copy)
    for args in (["simulate", PENDULUM, "--steps", "10", "-o", tmp_path / "t.csv"],
                 ["inverse", PENDULUM, tmp_path / "t.csv", "--derivatives", "given", "-o", tmp_path / "tau.csv"]):
        code, report, stderr = run_dyn(args, env, cwd=site)
        assert code == 0, stderr
        assert "compiling" not in stderr, stderr
        assert report["stats"]["saved"] == 0 and report["stats"]["fast_loads"] > 0, report


def test_the_cache_root_follows_the_environment(tmp_path, monkeypatch):
    for var in CACHE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert dyn_folder.cache_root() == tmp_path / "home" / ".cache" / "dyn"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dyn_folder.cache_root() == tmp_path / "xdg" / "dyn"
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    assert dyn_folder.cache_root() == tmp_path / "numba" / "dyn"
    monkeypatch.setenv("DYN_CACHE_DIR", str(tmp_path / "mine"))
    assert dyn_folder.cache_root() == tmp_path / "mine"
    assert dyn_folder.cache_folder().parent == tmp_path / "mine"


def make_folder(root, name, files=("aba.aba_kernel-35.py311.nbi", "aba.aba_kernel-35.py311.1.nbc"), mtime=0.0):
    folder = root / name
    (folder / "algorithms").mkdir(parents=True)
    (folder / dyn_folder._TAG).write_text(dyn_folder._TAG_TEXT)
    for f in files:
        (folder / "algorithms" / f).write_bytes(b"x")
    os.utime(folder, (mtime, mtime))
    return folder


def test_pruning_keeps_the_most_recent_folders_and_anything_not_dyns(tmp_path):
    names = [f"0.1.0-{i:012x}-numba0.68.1-py311" for i in range(6)]
    folders = [make_folder(tmp_path, n, mtime=1e9 + i) for i, n in enumerate(names)]
    current = folders[0]  # the oldest, but the one in use
    foreign = make_folder(tmp_path, "0.0.9-aaaaaaaaaaaa-numba0.60.0-py311", files=("notes.txt",), mtime=1.0)
    untagged = tmp_path / "0.0.8-bbbbbbbbbbbb-numba0.60.0-py311"
    untagged.mkdir()
    os.utime(untagged, (1.0, 1.0))
    other = tmp_path / "photos"
    other.mkdir()
    os.utime(other, (1.0, 1.0))
    someone_elses = make_folder(tmp_path, "0.0.7-cccccccccccc-numba0.60.0-py311", mtime=1.0)
    if os.geteuid() == 0:
        os.chown(someone_elses, 65534, 65534)
    removed = dyn_folder.prune_cache(tmp_path, keep=3, current=current)
    assert sorted(removed) == sorted(folders[1:3] + ([] if os.geteuid() == 0 else [someone_elses]))
    assert all(f.is_dir() for f in [current, *folders[3:], foreign, untagged, other])
    assert not any(f.exists() for f in folders[1:3])


def test_the_warm_cache_check_reads_dyns_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("DYN_CACHE_DIR", str(tmp_path))
    assert not cache.cache_is_warm()
    folder = dyn_folder.cache_folder()
    make_folder(tmp_path, folder.name, files=("aba.aba_kernel-35.py311.nbi",))
    assert not cache.cache_is_warm()  # RNEA missing
    (folder / "algorithms" / "rnea.rnea_kernel-22.py311.nbi").write_bytes(b"x")
    assert cache.cache_is_warm()
    assert folder in list(cache.cache_folders()) and folder / "algorithms" in list(cache.cache_folders())


def cached_object_code(folder, name, with_bitcode=False):
    """The object code of a cached kernel, read the way dyn's loader reads it (with_bitcode: and the bitcode of
    its module for linking)."""
    import pickle

    nbc = next(f for f in kernel_files(folder, name) if f.suffix == ".nbc")
    fmt, _, blob = pickle.loads(nbc.read_bytes())
    assert fmt == entries._FORMAT
    (_, kind, (obj, bitcode)) = pickle.loads(blob)[0]
    assert kind == "object"
    return (obj, bitcode) if with_bitcode else obj


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs binutils' nm to read the object file independently")
def test_the_undefined_symbols_of_cached_code_are_those_nm_lists(tmp_path, reference):
    obj = cached_object_code(dyn_folder.cache_folder(), "rnea.rnea_batch")
    (tmp_path / "k.o").write_bytes(obj)
    nm = subprocess.run(["nm", "-u", "--format=posix", tmp_path / "k.o"], capture_output=True, text=True, check=True)
    expected = {line.split()[0] for line in nm.stdout.splitlines() if line.strip()}
    assert set(symbols.undefined_symbols(obj)) == expected
    assert symbols.undefined_symbols(b"\xcf\xfa\xed\xfe not an ELF file") is None


@pytest.mark.parametrize("name", ["rnea.rnea_batch", "simulate._run"])
def test_the_names_cached_code_defines_are_those_numba_reads_from_its_module_for_linking(name, reference):
    """dynlib._numba.linking takes them from the object file instead of parsing the module (numba's
    JitEngine._load_defined_symbols: every function and global the module defines)."""
    import llvmlite.binding as ll

    if name == "simulate._run":
        invoke("simulate", PENDULUM, "--steps", "2", "-o", "-", cwd=ROOT)  # (cached in the suite's folder)
    obj, bitcode = cached_object_code(dyn_folder.cache_folder(), name, with_bitcode=True)
    module = ll.parse_bitcode(bitcode)
    numbas = {g.name for group in (module.functions, module.global_variables) for g in group if not g.is_declaration}
    assert symbols.defined_symbols(obj) == numbas
    assert symbols.defined_symbols(b"\xcf\xfa\xed\xfe not an ELF file") is None


LINKING = """
import json, sys
import llvmlite.binding as ll
parsed = []
parse = ll.parse_bitcode
ll.parse_bitcode = lambda data: parsed.append(len(data)) or parse(data)
{patch}
import numpy as np
import dynlib
from dynlib._numba import linking, probes
from dynlib.algorithms import rnea

pendulum = dynlib.load(sys.argv[1])
q = np.array([[0.4, -0.2]] * 3)
tau = dynlib.rnea(pendulum, q, q, q)
library = next(iter(rnea.rnea_batch.overloads.values())).library
out = {{"boundary": probes.boundary(), "tau": tau.tolist(), "lazy": type(library).__name__ == "EntryLibrary",
        "parsed_at_load": len(parsed)}}
if out["lazy"]:
    out["unknown_name"] = library.get_pointer_to_function("no_such_function")  # numba's reading of the names
    out["parsed_for_unknown_name"] = len(parsed) - out["parsed_at_load"]
    module = library._get_module_for_linking()  # what a compiled caller links in: parsed once, kept
    defined = [g.name for group in (module.functions, module.global_variables) for g in group if not g.is_declaration]
    out["linkable"] = any("rnea_batch" in name for name in defined) and module is library._get_module_for_linking()
    out["names_known"] = all(library._codegen._engine.is_symbol_defined(name) for name in defined)
    out["parsed_in_all"] = len(parsed) - out["parsed_at_load"]
print(json.dumps(out))
"""


def test_a_loaded_kernel_leaves_its_module_for_linking_unparsed_until_used(tmp_path, reference, warm_copy):
    """And numba's own _unserialize where its internals changed: the same results either way."""
    env = env_with(DYN_CACHE_DIR=warm_copy)
    args = [ROOT / "robots" / "double_pendulum.urdf"]
    runs = {}
    changed = "import numba.core.codegen as cg\ncg.CPUCodeLibrary._shared_module = None"  # a numba that changed
    for case, patch in (("dyn", ""), ("changed", changed)):
        r = subprocess.run([sys.executable, "-c", LINKING.format(patch=patch), *map(str, args)], env=env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr
        runs[case] = json.loads(r.stdout.strip().splitlines()[-1])
    on, off = runs["dyn"], runs["changed"]
    assert on["boundary"]["linking"] and on["lazy"] and on["parsed_at_load"] == 0, on
    assert on["unknown_name"] == 0 and on["parsed_for_unknown_name"] == 1
    assert on["linkable"] and on["names_known"] and on["parsed_in_all"] == 1
    assert not off["boundary"]["linking"] and not off["lazy"] and off["parsed_at_load"] >= 1, off
    assert "_shared_module is no longer a plain attribute" in " ".join(off["boundary"]["notes"])
    assert on["tau"] == off["tau"]


# ---------------------------------------------------------------- import, and the fast path


def snapshot(folder):
    return sorted((str(p.relative_to(folder)), p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*"))


def test_importing_dynlib_writes_and_deletes_nothing(tmp_path):
    """Not even where numba's own cache would create its folders when a kernel is decorated
    (NUMBA_CACHE_DIR), and not the cached kernels of another dyn there (the stale-cache
    guard of earlier versions deleted those)."""
    numba_dir = tmp_path / "numba"
    make_folder(numba_dir / "dyn", "0.0.1-0123456789ab-numba0.60.0-py311", mtime=1.0)
    old = numba_dir / "dynlib_0123" / "aba.aba_kernel-35.py311.nbi"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"x")
    before = snapshot(tmp_path)
    code = ("import importlib, pkgutil, dynlib\n"  # every module: every kernel decorated
            "for m in pkgutil.walk_packages(dynlib.__path__, 'dynlib.'):\n"
            "    importlib.import_module(m.name)\n")
    r = subprocess.run([sys.executable, "-c", code], env=env_with(HOME=tmp_path / "home", NUMBA_CACHE_DIR=numba_dir),
                       cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert snapshot(tmp_path) == before


def test_a_warm_start_loads_without_numbas_compiler(tmp_path, reference):
    """No context refresh: numba.np.arraymath (and the scipy.linalg its BLAS check imports) stay unloaded."""
    env = env_with(**{v: os.environ.get(v) for v in CACHE_VARS})
    for args in (inverse_args(reference, tmp_path / "tau.csv"),
                 ["simulate", PENDULUM, "--steps", "40", "-o", tmp_path / "traj.csv"]):
        code, report, err = run_dyn(args, env)
        assert code == 0, err
        assert report["boundary"] == {"cache": "dyn", "fast_load": True, "linking": True, "nrt_option": True,
                                      "callees": True, "lean": True, "notes": []}
        stats = report["stats"]
        assert stats["fast_loads"] >= 1 and stats["numba_loads"] == 0, stats
        assert stats["refreshes"] == 0 and stats["saved"] == 0 and stats["unsaved"] == 0, stats
        assert report["modules"] == []
    assert (tmp_path / "tau.csv").read_text() == (reference / "tau.csv").read_text()


def test_a_changed_load_signature_falls_back_to_numbas_loading(tmp_path, reference, warm_copy):
    patch = """
        import numba.core.caching as caching
        original = caching.Cache._load_overload
        def _load_overload(self, sig, target_context, extra=None):  # a numba whose private loader changed
            return original(self, sig, target_context)
        caching.Cache._load_overload = _load_overload
    """
    code, report, err = run_dyn(inverse_args(reference, tmp_path / "tau.csv"), env_with(DYN_CACHE_DIR=warm_copy),
                                patch)
    assert code == 0, err
    assert report["boundary"]["cache"] == "dyn" and report["boundary"]["fast_load"] is False
    assert "signature changed" in " ".join(report["boundary"]["notes"])
    stats = report["stats"]
    assert stats["numba_loads"] >= 1 and stats["fast_loads"] == 0 and stats["saved"] == 0, stats
    assert "numba.np.arraymath" in report["modules"]  # numba's own loading refreshed its context
    assert (tmp_path / "tau.csv").read_text() == (reference / "tau.csv").read_text()


FALLBACK = """
import json, sys
import numpy as np
import numba
import numba.core.caching as caching
from numba.core.cpu import CPUTargetOptions

# a numba without the internals dyn reaches: its cache locator base, its private loader, the _nrt option
del caching._CacheLocator
original = caching.Cache._load_overload
caching.Cache._load_overload = lambda self, sig, target_context, extra=None: original(self, sig, target_context)
for cls in CPUTargetOptions.__mro__:
    if "_nrt" in vars(cls):
        delattr(cls, "_nrt")
try:
    numba.njit(_nrt=False)(lambda: 1)()
    nrt_gone = False
except KeyError:
    nrt_gone = True

import dynlib
from dynlib._numba import probes
from dynlib.algorithms import aba, crba, rnea

pendulum = dynlib.load(sys.argv[1])
q, v, a = 0.4, 0.7, -1.3
out = {{"nrt_gone": nrt_gone, "boundary": probes.boundary(),
       "rnea": float(dynlib.rnea(pendulum, [q], [v], [a])[0]),
       "aba": float(dynlib.aba(pendulum, [q], [v], [0.5])[0]),
       "crba": float(dynlib.crba(pendulum, [q])[0, 0])}}
kernels = [k for m in (aba, crba, rnea) for k in vars(m).values() if hasattr(k, "stats") and hasattr(k, "py_func")]
out["hits"] = sum(sum(k.stats.cache_hits.values()) for k in kernels)
out["misses"] = sum(sum(k.stats.cache_misses.values()) for k in kernels)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_without_numbas_internals_the_kernels_compile_cache_and_agree(tmp_path):
    """Closed forms of robots/pendulum.urdf: M = 1.001, g(q) = 9.81 sin q."""
    import math

    env = env_with(DYN_CACHE_DIR=tmp_path / "cache", HOME=tmp_path / "home")
    runs = []
    for _ in range(2):  # the first compiles into the folder, the second loads from it
        r = subprocess.run([sys.executable, "-c", FALLBACK.format(), ROOT / "robots" / "pendulum.urdf"], env=env,
                           cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, r.stderr
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    for out in runs:
        assert out["nrt_gone"]
        assert out["boundary"]["cache"] == "numba" and not out["boundary"]["fast_load"]
        assert not out["boundary"]["nrt_option"]
        assert out["rnea"] == pytest.approx(1.001 * -1.3 + 9.81 * math.sin(0.4), rel=1e-12)
        assert out["aba"] == pytest.approx((0.5 - 9.81 * math.sin(0.4)) / 1.001, rel=1e-12)
        assert out["crba"] == pytest.approx(1.001, rel=1e-12)
    assert runs[0]["misses"] >= 1 and runs[1]["misses"] == 0 and runs[1]["hits"] >= 1
    folder = tmp_path / "cache" / dyn_folder.cache_folder().name
    assert list(folder.rglob("rnea.rnea_kernel-*.nbi")), "numba's own cache is pointed at dyn's folder"
    assert not (tmp_path / "home" / ".cache" / "numba").exists()


# ---------------------------------------------------------------- cache faults


def damage(kind, folder):
    """Damage the cached `rnea.rnea_batch` (the kernel `dyn inverse` loads) in one way: its index, or
    every data file (one per signature: earlier tests may have cached others beside the inverse's)."""
    suffix = ".nbc" if kind.endswith("data") else ".nbi"
    for f in (f for f in kernel_files(folder, "rnea.rnea_batch") if f.suffix == suffix):
        data = f.read_bytes()
        if kind.startswith("truncated"):
            f.write_bytes(data[: len(data) // 2])
        elif kind == "empty index":
            f.write_bytes(b"")
        else:  # one byte changed in the middle, where the object code is
            i = len(data) // 2
            f.write_bytes(data[:i] + bytes([data[i] ^ 0x55]) + data[i + 1:])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["truncated data", "truncated index", "empty index", "corrupt data"])
def test_a_damaged_cache_file_is_discarded_and_compiled_again(tmp_path, reference, kind):
    """In a private NUMBA_CACHE_DIR (dyn keeps its cache under NUMBA_CACHE_DIR/dyn when it is set)."""
    numba_dir = tmp_path / "numba"
    folder = numba_dir / "dyn" / dyn_folder.cache_folder().name
    shutil.copytree(dyn_folder.cache_folder(), folder, ignore=shutil.ignore_patterns("*.tmp.*"))
    damage(kind, folder)
    env = env_with(NUMBA_CACHE_DIR=numba_dir)
    code, report, err = run_dyn(inverse_args(reference, tmp_path / "tau.csv"), env)
    assert code == 0, err
    assert "internal error" not in err and len(warnings_in(err)) == 1, err
    assert "damaged kernel cache entry of dynlib.algorithms.rnea.rnea_batch" in warnings_in(err)[0]
    assert report["stats"]["discarded"] == 1 and report["stats"]["saved"] >= 1, report
    assert (tmp_path / "tau.csv").read_text() == (reference / "tau.csv").read_text()
    code, report, err = run_dyn(inverse_args(reference, tmp_path / "tau2.csv"), env)  # repaired
    assert code == 0 and warnings_in(err) == [], err
    assert report["stats"]["discarded"] == 0 and report["stats"]["saved"] == 0, report


DISK_FULL = """
    import builtins, errno, os
    _open, _root = builtins.open, os.environ["DYN_CACHE_DIR"]

    class Full:
        def __init__(self, f):
            self.f = f
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            self.f.close()
        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        def close(self):
            self.f.close()

    def open(file, mode="r", *args, **kw):
        f = _open(file, mode, *args, **kw)
        writing = any(c in mode for c in "wax+")
        return Full(f) if writing and os.path.abspath(os.fspath(file)).startswith(_root) else f

    builtins.open = open
"""


@pytest.mark.slow
def test_a_full_disk_during_the_first_compile_compiles_in_memory(tmp_path, reference, warm_copy):
    for f in kernel_files(warm_copy, "rnea.rnea_batch"):
        f.unlink()
    code, report, err = run_dyn(inverse_args(reference, tmp_path / "tau.csv"), env_with(DYN_CACHE_DIR=warm_copy),
                                DISK_FULL)
    assert code == 0, err
    assert "internal error" not in err and len(warnings_in(err)) == 1, err
    assert "cannot write the kernel cache" in err and os.strerror(errno.ENOSPC) in err
    assert report["stats"]["unsaved"] >= 1 and report["stats"]["saved"] == 0, report
    assert (tmp_path / "tau.csv").read_text() == (reference / "tau.csv").read_text()
    assert not list(warm_copy.rglob("rnea.rnea_batch-*")) and not list(warm_copy.rglob("*.tmp.*"))


def test_the_compile_notice_does_not_follow_numbas_cache_folder(tmp_path, reference, warm_copy):
    """A fresh NUMBA_CACHE_DIR beside a warm DYN_CACHE_DIR: nothing to compile, nothing said,
    nothing written there."""
    numba_dir = tmp_path / "numba"
    numba_dir.mkdir()
    code, report, err = run_dyn(inverse_args(reference, tmp_path / "tau.csv"),
                                env_with(DYN_CACHE_DIR=warm_copy, NUMBA_CACHE_DIR=numba_dir))
    assert code == 0 and "compiling" not in err, err
    assert report["stats"]["saved"] == 0 and list(numba_dir.iterdir()) == []


class Terminal(io.StringIO):
    def isatty(self):
        return True


def compile_two_kernels_under_progress(monkeypatch, command, terminal=True, quiet=False):
    """Run `compile_progress` for a click command named `command` around the compile of two
    kernels (outer, and inner while outer is typed); returns standard error."""
    import click

    from cli.common import compile_progress

    err = Terminal() if terminal else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)

    def outer(x):
        return inner(x) + 1

    inner = numba.njit(lambda x: 2 * x)
    with click.Context(click.Command(command), obj={"quiet": quiet}) as ctx:
        compile_progress(ctx)
        assert numba.njit(outer)(1.0) == 3.0
    text = err.getvalue()
    numba.njit(lambda x: x)(1.0)  # after the command: nothing more
    assert err.getvalue() == text
    return text


def draws(line):
    """The counts of each redraw of a progress line."""
    return [d.split(",")[0] for d in line.split("\r") if d]


@pytest.mark.parametrize("terminal, quiet", [(False, False), (True, True)])
def test_no_compile_progress_line_off_a_terminal_or_with_quiet(monkeypatch, tmp_path, terminal, quiet):
    monkeypatch.setenv("DYN_CACHE_DIR", str(tmp_path))
    assert compile_two_kernels_under_progress(monkeypatch, "probe", terminal, quiet) == ""
    assert events.expected_compiles("probe") is None  # nothing recorded either


def test_with_no_known_total_the_compile_progress_line_counts_the_kernels_started(monkeypatch, tmp_path):
    monkeypatch.setenv("DYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(dyn_folder, "unwritable", [])  # whatever an earlier test did
    lines = compile_two_kernels_under_progress(monkeypatch, "probe").split("\n")
    assert draws(lines[0]) == ["dyn: kernels compiled 0/1", "dyn: kernels compiled 0/2",
                               "dyn: kernels compiled 1/2", "dyn: kernels compiled 2/2"]
    assert lines[1:] == [""]  # one line, finished once every kernel started is compiled
    assert events.expected_compiles("probe") == 2  # recorded for the next time


def test_the_compile_progress_total_is_what_the_command_compiled_last_time(monkeypatch, tmp_path):
    monkeypatch.setenv("DYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(dyn_folder, "unwritable", [])
    events.record_compiles("probe", 3)
    lines = compile_two_kernels_under_progress(monkeypatch, "probe").split("\n")
    assert draws(lines[0]) == ["dyn: kernels compiled 0/3", "dyn: kernels compiled 0/3",
                               "dyn: kernels compiled 1/3", "dyn: kernels compiled 2/3"]
    assert lines[1:] == [""]  # short of the total: the line is finished when the command ends
    assert events.expected_compiles("probe") == 2


def test_compile_counts_fall_back_to_the_shipped_figure(monkeypatch, tmp_path):
    monkeypatch.setenv("DYN_CACHE_DIR", str(tmp_path / "none"))
    monkeypatch.setattr(dyn_folder, "unwritable", [])
    assert events.expected_compiles("simulate") == events._COUNTS_SHIPPED["simulate"]
    assert events.expected_compiles("probe") is None
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / events._COUNTS).write_text("{not json")  # damaged: ignored, then replaced
    assert events.expected_compiles("simulate") == events._COUNTS_SHIPPED["simulate"]
    events.record_compiles("simulate", 70)
    assert events.expected_compiles("simulate") == 70
    assert [p.name for p in (tmp_path / "none").iterdir()] == [events._COUNTS]


def test_an_unwritable_cache_root_records_no_compile_count_and_raises_nothing(monkeypatch, tmp_path):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("DYN_CACHE_DIR", str(tmp_path / "file" / "cache"))  # under a file: not even root writes
    events.record_compiles("probe", 5)
    assert events.expected_compiles("probe") is None and (tmp_path / "file").read_text() == ""


@pytest.mark.slow
def test_a_fresh_cache_folder_compiles_and_says_so_once(tmp_path, reference):
    env = env_with(DYN_CACHE_DIR=tmp_path / "fresh")
    code, report, err = run_dyn(inverse_args(reference, tmp_path / "tau.csv"), env)
    assert code == 0 and "dyn: compiling the dynamics kernels (first run only" in err, err
    assert report["stats"]["saved"] >= 1
    code, report, err = run_dyn(inverse_args(reference, tmp_path / "tau.csv"), env)
    assert code == 0 and err == "", err
    assert report["stats"]["saved"] == 0 and report["stats"]["fast_loads"] >= 1


# a numba whose compiler changed its signature: dyn's callee compile (dynlib._numba.callees) is off
NO_CALLEES = """
    import numba.core.compiler as compiler
    original = compiler.CompilerBase.__init__
    def __init__(self, typing_context, *args, **kw):
        original(self, typing_context, *args, **kw)
    compiler.CompilerBase.__init__ = __init__
"""
# a numba whose lowering changed a signature: dyn's lean compile (dynlib._numba.lean) is off
NO_LEAN = """
    import numba.core.lowering as lowering
    original_delvar = lowering.Lower.delvar
    def delvar(self, name, extra=None):
        return original_delvar(self, name)
    lowering.Lower.delvar = delvar
"""


@pytest.mark.slow
def test_kernels_called_from_compiled_code_compile_as_callees_with_the_same_results(tmp_path):
    """The loop's callees are cached as callees only (no entry from Python, no machine code of their own), once per
    argument types, the stages as inlined callees, and the trajectory is byte for byte the one of numba's own
    compile of every kernel (the fallbacks: numba's own lowering and inlining too, dynlib._numba.lean)."""
    runs = {}
    for name, patch in (("callees", ""), ("numba", NO_CALLEES + NO_LEAN)):
        out = tmp_path / f"{name}.csv"
        code, report, err = run_dyn(["simulate", PENDULUM, "--steps", "200", "--columns", "q,qd,qdd,tau,energy",
                                     "-o", out], env_with(DYN_CACHE_DIR=tmp_path / name), patch)
        assert code == 0, err
        names = {p.name.split("-")[0] for p in (tmp_path / name).rglob("*.nbi")}
        runs[name] = (out.read_bytes(), report["boundary"], names)
    (callees, on, with_twins), (numba_s, off, without) = runs["callees"], runs["numba"]
    assert on["callees"] and not off["callees"] and "signature changed" in " ".join(off["notes"])
    assert on["lean"] and not off["lean"] and "Lower.delvar" in " ".join(off["notes"])
    assert {"simulate._run", "callee.simulate._finite", "callee.aba.aba_kernel"} <= with_twins
    assert "simulate._finite" not in with_twins and not any(n.startswith("callee.") for n in without)
    assert "simulate._finite" in without
    # the stages: inlined by LLVM, their twins cached under their own names; numba's IR inlining in the fallback
    assert {"callee.inlined.stages.acceleration", "callee.inlined.simulate.evaluate"} <= with_twins
    assert not any("stages." in n for n in without)
    # a kernel called with constant arguments (row and column offsets 0 and 3) is compiled once
    assert len(list((tmp_path / "callees").rglob("callee.spatial.add_to_mat3-*.nbc"))) == 1
    assert callees == numba_s


# ---------------------------------------------------------------- read-only installs


def another_user():
    """A preexec_fn that runs the child as a user without root's way around file permissions:
    `nobody` when that user can run this interpreter; otherwise (the interpreter is in a
    folder only root may enter) root without the capabilities that override file permissions
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER), so that modes apply to it like to
    anyone. Returns (preexec_fn, uid, gid)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to run dyn as another user (os.setuid) or without root's permission override")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        nobody = None
    if nobody is not None:
        def become_nobody():
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)

        try:
            probe = subprocess.run([sys.executable, "-c", "import numba"], preexec_fn=become_nobody,
                                   capture_output=True)
            if probe.returncode == 0:
                return become_nobody, nobody.pw_uid, nobody.pw_gid
        except OSError:  # nobody may not even run the interpreter
            pass
    libc = ctypes.CDLL(None, use_errno=True)

    def drop_permission_override():
        for cap in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER, from the bounding set
            if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    probe = subprocess.run([sys.executable, "-c", "open('/proc/self/status')"], preexec_fn=drop_permission_override,
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot drop root's permission override here (prctl)")
    return drop_permission_override, 0, 0


@pytest.fixture
def read_only_install(reference):
    """dyn's packages copied into a read-only folder owned by root (as in a system site-packages),
    with the reference trajectory beside, in a folder any user can read."""
    base = Path(tempfile.mkdtemp(prefix="dyn-ro-", dir="/tmp"))
    try:
        base.chmod(0o755)
        site = base / "site"
        for pkg in ("cli", "dynlib"):
            shutil.copytree(ROOT / pkg, site / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.nb[ic]"))
        shutil.copy(reference / "traj.csv", base / "traj.csv")
        (base / "traj.csv").chmod(0o644)
        for top, dirs, files in os.walk(site):
            for f in files:
                os.chmod(os.path.join(top, f), 0o444)
            os.chmod(top, 0o555)
        yield base
    finally:
        for top, dirs, _ in os.walk(base):
            os.chmod(top, 0o755)
        shutil.rmtree(base, ignore_errors=True)


def user_folder(base, name, uid, gid, mode):
    folder = base / name
    folder.mkdir()
    os.chown(folder, uid, gid)
    folder.chmod(mode)
    return folder


def run_as(preexec, base, home, work, out):
    env = env_with(source=base / "site", HOME=home, PYTHONDONTWRITEBYTECODE=1)
    args = ["inverse", PENDULUM, base / "traj.csv", "--derivatives", "given", "-o", work / out]
    return run_dyn(args, env, cwd=work, preexec_fn=preexec)


@pytest.mark.slow
def test_a_read_only_install_compiles_once_into_the_users_cache(read_only_install, reference):
    preexec, uid, gid = another_user()
    base = read_only_install
    home = user_folder(base, "home", uid, gid, 0o755)
    work = user_folder(base, "work", uid, gid, 0o755)
    installed = snapshot(base / "site")
    code, report, err = run_as(preexec, base, home, work, "tau1.csv")
    assert code == 0, err
    assert "dyn: compiling the dynamics kernels (first run only" in err and warnings_in(err) == [], err
    assert report["stats"]["saved"] >= 1
    folder = home / ".cache" / "dyn" / dyn_folder.cache_folder().name
    assert list(folder.rglob("rnea.rnea_batch-*.nbi"))
    code, report, err = run_as(preexec, base, home, work, "tau2.csv")
    assert code == 0 and err == "", err
    assert report["stats"]["saved"] == 0 and report["stats"]["fast_loads"] >= 1
    assert snapshot(base / "site") == installed
    for out in ("tau1.csv", "tau2.csv"):
        assert (work / out).read_text() == (reference / "tau.csv").read_text()


@pytest.mark.slow
def test_no_writable_cache_at_all_compiles_in_memory_with_one_warning(read_only_install, reference):
    preexec, uid, gid = another_user()
    base = read_only_install
    home = user_folder(base, "home", uid, gid, 0o555)
    work = user_folder(base, "work", uid, gid, 0o755)
    code, report, err = run_as(preexec, base, home, work, "tau.csv")
    assert code == 0, err
    assert "internal error" not in err and len(warnings_in(err)) == 1, err
    assert "cannot write the kernel cache" in warnings_in(err)[0]
    assert report["stats"]["unsaved"] >= 1 and report["stats"]["saved"] == 0
    assert not any(p for p in home.iterdir())
    assert (work / "tau.csv").read_text() == (reference / "tau.csv").read_text()
    mode = stat.S_IMODE(home.stat().st_mode)
    assert mode == 0o555


SIGNATURES = """
import sys, warnings
import numpy as np
from dynlib._numba.one import checked_sum

x64, x32 = np.arange(1.0, 6.0), np.arange(1.0, 6.0, dtype=np.float32)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sums = [float(checked_sum(x64, 5)), float(checked_sum(x32, 5))]
if sys.argv[1] == "swap":  # the index of another process's race: each signature named to the other's code
    cache = checked_sum._cache._cache_file
    index = cache._load_index()
    a, b = list(index)
    index[a], index[b] = index[b], index[a]
    cache._save_index(index)
print(sums, [str(w.message) for w in caught])
"""


def test_a_cache_entry_holding_another_signatures_code_is_not_loaded(tmp_path):
    """Two signatures of one kernel, the index pointing each at the other's machine code (what two
    processes saving at once could leave): the code is compiled again, not run on the wrong types."""
    env = env_with(DYN_CACHE_DIR=tmp_path / "cache")

    def run(step):
        r = subprocess.run([sys.executable, "-c", SIGNATURES, step], env=env, cwd=ROOT, capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout.strip()

    assert run("swap") == "[15.0, 15.0] []"
    out = run("load")
    assert out.startswith("[15.0, 15.0] ") and out.count("discarded a damaged kernel cache entry") == 1, out
    assert "of dynlib._numba.one.checked_sum in " in out and "holds the code of" in out, out
    assert run("load") == "[15.0, 15.0] []"  # compiled again and saved: loads cleanly


def test_without_numbas_event_api_the_compiles_go_unwatched(monkeypatch):
    """events.watch_compiles probes numba's event API: when it is gone, nothing is watched and nothing raises
    (the command line then draws no progress line)."""
    from numba.core import event

    real = event.register

    def changed(kind, listener):  # a numba whose compile events are no longer what dyn knows
        if kind == "numba:compile":
            raise TypeError("register() takes no listener of this kind")
        real(kind, listener)

    monkeypatch.setattr(event, "register", changed)
    seen = []
    stop = events.watch_compiles(lambda: seen.append("start"), lambda: seen.append("end"))
    numba.njit(lambda x: x + 1)(1)
    stop()
    assert seen == []


def test_a_cache_index_numba_wrote_in_another_format_counts_as_holding_the_kernel(tmp_path):
    """cache.index_holds reads numba's private index format; an index it cannot read (a numba that changed
    it) counts as holding the kernel (is_cached only asks of index files that are there)."""
    from dynlib.sim.simulate import _run

    index = tmp_path / "simulate._run-100.py311.nbi"
    index.write_bytes(b"not a pickle numba ever wrote")
    assert cache.index_holds(index, _run)


# ---------------------------------------------------------------- the lean compile (dynlib._numba.lean)


def _lowered(monkeypatch, compile_and_run):
    """(result, the LLVM IR numba lowered, before any LLVM pass) of compile_and_run()."""
    from numba.core import codegen

    texts, original = [], codegen.CPUCodeLibrary.add_ir_module

    def add_ir_module(self, ir_module):
        texts.append(str(ir_module))
        return original(self, ir_module)

    monkeypatch.setattr(codegen.CPUCodeLibrary, "add_ir_module", add_ir_module)
    return compile_and_run(), "\n".join(texts)


def test_a_kernel_without_the_runtime_lowers_without_its_dead_loads_and_zero_fills(monkeypatch):
    """A record that lives across blocks (x: a slot) is neither loaded before it is written nor zero-filled
    when it dies (numba's lowering does both, for the runtime's references); the same result, no C entry."""
    from collections import namedtuple

    from dynlib._numba import lean

    Pair = namedtuple("Pair", "a b")

    def swapped_products(r, n):
        s = 0.0
        for i in range(n):
            x = r if i % 2 else Pair(r.b, r.a)
            s += x.a[0] * x.b[1]
        return s

    r = Pair(np.array([1.0, 2.0]), np.array([3.0, 5.0]))
    kernels = {"numba": numba.njit(_nrt=False)(swapped_products),
               "lean": numba.njit(_nrt=False, pipeline_class=lean.compiler_class(), **lean.OPTIONS)(swapped_products)}
    runs = {name: _lowered(monkeypatch, lambda k=k: k(r, 5)) for name, k in kernels.items()}
    (numba_result, numba_ir), (lean_result, lean_ir) = runs["numba"], runs["lean"]
    assert lean_result == numba_result == 3 * 3.0 * 2.0 + 2 * 1.0 * 5.0
    record = "[2 x {i8*, i8*, i64, i64, double*, [1 x i64], [1 x i64]}]"  # Pair: two 1-D arrays
    counts = {name: (text.count(f"store {record} zeroinitializer"), text.count(f"= load {record}, "))
              for name, text in (("numba", numba_ir), ("lean", lean_ir))}
    (numba_zero, numba_loads), (lean_zero, lean_loads) = counts["numba"], counts["lean"]
    # gone: the load and zero-fill of each of two deaths of a record slot, the load before each of two writes
    assert (numba_zero - lean_zero, numba_loads - lean_loads) == (2, 4)
    assert "cfunc." in numba_ir and "cfunc." not in lean_ir
