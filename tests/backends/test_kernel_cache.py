"""The fused-kernel disk cache never crashes the process: damaged, lying, foreign and unwritable caches.

Every case that could load a damaged library runs in a child process, so a crash (SIGBUS from
loading a truncated .so, before the cache verified its files) fails the test instead of killing pytest.
"""
import ctypes
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tinyflow as tfl
from tinyflow.backends import compiler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# two fused kernels (5,000 elements: above the C backend's small-array threshold, so they run);
# prints what the compiler did, the warnings it gave and whether the values are numpy's
SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np, tinyflow as tfl
    from tinyflow.backends import compiler
    from tinyflow.backends.compiler import STATS
    if "other-cpu" in sys.argv:  # pretend to be another machine sharing this cache
        compiler.cpu_identity = lambda: ("Other CPU 9000", "0123456789abcdef")
    x = tfl.Placeholder((5000,), name="x")
    fetches = [tfl.sigmoid(x * 0.75 - 0.25) * 4.0, tfl.tanh(x * 1.5 + 0.5) - x]
    feed = {x: np.linspace(-3, 3, 5000, dtype=np.float32)}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = tfl.Session(backend="c", optimize=True).run(fetches, feed)
    ref = tfl.Session(backend="c", optimize=False).run(fetches, feed)
    print(json.dumps(dict(STATS, close=all(np.allclose(o, r, rtol=1e-5, atol=1e-6) for o, r in zip(out, ref)),
                          folder=compiler.folder(), warnings=[f"{w.category.__name__}: {w.message}" for w in caught])))
""")


@pytest.fixture(autouse=True)
def c_backend_only():
    if "c" not in tfl.backends.available():
        pytest.skip("the kernel cache holds C kernels: the C library is not built")


@pytest.fixture
def cache(tmp_path):
    """A fresh cache root for the child processes (the kernels are in cache/kernels)."""
    return tmp_path / "cache"


def child(cache, *args, wrapper=(), preexec_fn=None):
    """Run SCRIPT in a new process on `cache`; its report (the test fails on any crash or error)."""
    env = dict(os.environ, PYTHONPATH=ROOT, TINYFLOW_CACHE_DIR=str(cache), TINYFLOW_FUSION_JIT_AFTER="0",
               OMP_NUM_THREADS="1")
    done = subprocess.run([*wrapper, sys.executable, "-c", SCRIPT, *args], env=env, capture_output=True, text=True,
                          timeout=120, preexec_fn=preexec_fn)
    assert done.returncode == 0, f"the child died with status {done.returncode}:\n{done.stderr[-3000:]}"
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["close"], "the fused kernels' values differ from the unfused ones"
    return report


def libraries(cache):
    """{kernel name: library path} of the cache's entries."""
    folder = cache / "kernels"
    return {p.stem: folder / json.loads(p.read_text())["file"] for p in folder.glob("tf_fused_*.json")}


def only_warning(report, category, *phrases):
    """The report has exactly one warning, of `category`, containing every phrase."""
    assert len(report["warnings"]) == 1, report["warnings"]
    warning = report["warnings"][0]
    assert warning.startswith(category) and all(p in warning for p in phrases), warning


def test_a_truncated_or_bit_flipped_library_is_set_aside_and_rebuilt_never_loaded(cache):
    first = child(cache)
    assert (first["compiled"], first["loaded_from_disk"], first["warnings"]) == (2, 0, [])
    assert child(cache)["loaded_from_disk"] == 2
    truncated, flipped = sorted(libraries(cache).values())
    with open(truncated, "r+b") as f:  # what a full disk or a damaged copy leaves: SIGBUS when loaded
        f.truncate(1000)
    data = bytearray(flipped.read_bytes())
    data[len(data) // 2] ^= 0x10
    flipped.write_bytes(bytes(data))
    second = child(cache)
    assert (second["quarantined"], second["compiled"], second["loaded_from_disk"]) == (2, 2, 0)
    warnings = "\n".join(second["warnings"])
    assert len(second["warnings"]) == 2 and warnings.count("KernelCacheWarning") == 2, warnings
    assert f"{truncated} failed verification: its entry says" in warnings and "the file has 1000" in warnings
    assert f"{flipped} failed verification: its sha256 differs" in warnings
    quarantined = sorted(p.name for p in (cache / "kernels" / "quarantine").iterdir())
    assert len(quarantined) == 4 and any(p.startswith(truncated.name) for p in quarantined)
    third = child(cache)
    assert (third["loaded_from_disk"], third["compiled"], third["warnings"]) == (2, 0, [])


def test_a_sound_file_that_does_not_load_is_set_aside_and_rebuilt(cache):
    child(cache)
    library = sorted(libraries(cache).values())[0]
    entry = library.parent / (library.name.split("-")[0] + ".json")
    junk = b"\x7fELF but not a shared library" * 10  # an entry vouching for it: verification passes, dlopen fails
    record = json.loads(entry.read_text())
    record.update(size=len(junk), sha256=hashlib.sha256(junk).hexdigest())
    renamed = library.with_name(f"{library.name.split('-')[0]}-{record['sha256'][:16]}{compiler.SUFFIX}")
    record["file"] = renamed.name
    library.unlink()
    renamed.write_bytes(junk)
    entry.write_text(json.dumps(record))
    report = child(cache)
    assert (report["quarantined"], report["compiled"], report["loaded_from_disk"]) == (1, 1, 1)
    only_warning(report, "KernelCacheWarning", str(renamed), "it does not load")


def test_a_kernel_cached_for_another_cpu_model_is_not_loaded(cache, capsys, monkeypatch):
    other = child(cache, "other-cpu")
    assert other["compiled"] == 2
    here = child(cache)
    assert (here["compiled"], here["loaded_from_disk"]) == (2, 0)  # same source and flags, another CPU
    records = [json.loads(p.read_text()) for p in (cache / "kernels").glob("*.json")]
    assert sorted(r["cpu"] for r in records) == sorted(["Other CPU 9000"] * 2 + [compiler.cpu_identity()[0]] * 2)
    assert child(cache, "other-cpu")["loaded_from_disk"] == 2  # each machine finds its own
    from tinyflow.cli import main
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(cache))
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "4 kernels" in out and "2 for this machine, 2 for another CPU or compiler" in out


def test_the_key_holds_the_source_flags_compiler_and_cpu(monkeypatch):
    key = compiler.kernel_key("int f;", ["-O3"])
    assert compiler.kernel_key("int f;", ["-O3"]) == key
    assert compiler.kernel_key("int g;", ["-O3"]) != key
    assert compiler.kernel_key("int f;", ["-O3", "-march=native"]) != key
    monkeypatch.setenv("CFLAGS", "-O0")
    assert compiler.kernel_key("int f;", ["-O3"]) != key
    monkeypatch.delenv("CFLAGS")
    monkeypatch.setattr(compiler, "compiler_identity", lambda: "/opt/clang: clang version 99")
    assert compiler.kernel_key("int f;", ["-O3"]) != key
    monkeypatch.undo()
    monkeypatch.setattr(compiler, "cpu_identity", lambda: ("Other CPU 9000", "0123456789abcdef"))
    assert compiler.kernel_key("int f;", ["-O3"]) != key
    monkeypatch.undo()
    assert compiler.kernel_key("int f;", ["-O3"]) == key
    model, digest = compiler.cpu_identity()
    assert model and len(digest) == 16
    assert compiler.compiler_identity().startswith("/")  # the compiler's resolved path, then its version


def _fake_entry(folder, name, payload=b"library bytes"):
    """A library file (never loaded here) and its correct entry, as store() writes them."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(payload).hexdigest()
    library = folder / f"{name}-{digest[:16]}{compiler.SUFFIX}"
    library.write_bytes(payload)
    record = dict(file=library.name, size=len(payload), sha256=digest)
    (folder / f"{name}.json").write_text(json.dumps(record))
    return library, record


@pytest.mark.parametrize("damage, phrase", [
    (lambda r: r.update(size=r["size"] + 1), "its entry says 14 bytes, the file has 13"),
    (lambda r: r.update(size=10**15), "the file has 13"),
    (lambda r: r.update(sha256="0" * 64), "not a valid record"),          # no longer matches the file's name
    (lambda r: r.update(file="../../outside" + compiler.SUFFIX), "not a valid record"),
    (lambda r: r.update(size="13"), "not a valid record"),
    (lambda r: r.pop("sha256"), "not a valid record"),
    ("not json", "not a valid record"),
])
def test_an_entry_that_lies_or_is_damaged_is_set_aside(monkeypatch, tmp_path, damage, phrase):
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "kernels"
    library, record = _fake_entry(folder, "tf_fused_0123")
    assert compiler.lookup("tf_fused_0123") == str(library)
    if damage == "not json":
        (folder / "tf_fused_0123.json").write_bytes(b'{"file": "tf_fused_0123-')
    else:
        damage(record)
        (folder / "tf_fused_0123.json").write_text(json.dumps(record))
    with pytest.raises(compiler.DamagedEntry, match="failed verification") as info:
        compiler.lookup("tf_fused_0123")
    assert phrase in str(info.value) and "moved it to" in str(info.value)
    assert not (folder / "tf_fused_0123.json").exists()  # set aside: the next lookup is a plain miss
    assert len(list((folder / "quarantine").iterdir())) in (1, 2)
    assert compiler.lookup("tf_fused_0123") is None


def test_a_same_sized_library_with_other_bytes_is_set_aside(monkeypatch, tmp_path):
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(tmp_path))
    library, _ = _fake_entry(tmp_path / "kernels", "tf_fused_0123")
    library.write_bytes(b"library bytez")
    with pytest.raises(compiler.DamagedEntry, match="sha256 differs"):
        compiler.lookup("tf_fused_0123")
    assert not library.exists()


def test_the_entry_is_written_after_its_library(monkeypatch, tmp_path):
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "kernels"
    folder.mkdir()
    built = folder / ".tf_fused_0123-build.so"
    built.write_bytes(b"library bytes")
    seen = []
    write = compiler._write_atomically

    def spy(path, data):  # what a reader could find at the moment the entry appears
        library = folder / json.loads(data)["file"]
        seen.append(library.read_bytes() if library.exists() else None)
        write(path, data)
    monkeypatch.setattr(compiler, "_write_atomically", spy)
    path = compiler.store("tf_fused_0123", str(built), {})
    assert seen == [b"library bytes"] and not built.exists()
    assert compiler.lookup("tf_fused_0123") == path
    # a writer stopped between its two renames leaves a library without an entry: never loaded, compiled again
    (folder / "tf_fused_0123.json").unlink()
    assert compiler.lookup("tf_fused_0123") is None


# ---------------------------------------------------------------- caches that cannot be written
def _drop_root_file_powers():
    """preexec_fn: without CAP_DAC_OVERRIDE a root child obeys permission bits like any user."""
    if os.geteuid() != 0:
        return None
    libc = ctypes.CDLL(None, use_errno=True)

    def drop():
        for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH: gone from the bounding set at exec
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
                os._exit(97)
    return drop


def _namespace_or_skip():
    """`unshare -rm`: a private mount namespace where the test may mount a tiny or read-only file system."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode:
        pytest.skip("needs Linux user namespaces (`unshare -rm`, util-linux) to mount a full or read-only folder")


def test_a_cache_without_write_permission_compiles_for_the_process_with_one_warning(cache):
    if not sys.platform.startswith("linux"):
        pytest.skip("dropping root's file permissions uses Linux's prctl")
    (cache / "kernels").mkdir(parents=True)
    (cache / "kernels").chmod(0o555)
    try:
        report = child(cache, preexec_fn=_drop_root_file_powers())
    finally:
        (cache / "kernels").chmod(0o755)
    assert (report["compiled"], report["uncached"], report["failed"]) == (2, 2, 0)
    only_warning(report, "KernelCacheWarning", f"cannot write its kernel cache {cache / 'kernels'}",
                 "Permission denied", "compiled for this process only")
    assert list((cache / "kernels").iterdir()) == []


def test_a_read_only_cache_loads_what_it_has_and_compiles_the_rest_for_the_process(cache):
    _namespace_or_skip()
    child(cache)
    library = sorted(libraries(cache).values())[0]
    with open(library, "r+b") as f:
        f.truncate(1000)
    folder = cache / "kernels"
    report = child(cache, wrapper=["unshare", "-rm", "sh", "-c",
                                   f'mount --bind -o ro "{folder}" "{folder}" && exec "$0" "$@"'])
    assert (report["loaded_from_disk"], report["quarantined"], report["uncached"]) == (1, 1, 1)
    warnings = "\n".join(report["warnings"])
    assert len(report["warnings"]) == 2, warnings
    assert f"{library} failed verification" in warnings and "cannot be moved aside" in warnings
    assert "Read-only file system" in warnings and "compiled for this process only" in warnings
    assert os.path.getsize(library) == 1000  # untouched: the folder is read-only


def test_a_full_disk_while_compiling_compiles_for_the_process_with_one_warning(cache):
    _namespace_or_skip()
    folder = cache / "kernels"
    folder.mkdir(parents=True)
    # 16 KiB of tmpfs: room for the C source, not the library (~28 KiB)
    report = child(cache, wrapper=["unshare", "-rm", "sh", "-c",
                                   f'mount -t tmpfs -o size=16k none "{folder}" && exec "$0" "$@"'])
    assert (report["compiled"], report["uncached"], report["failed"]) == (2, 2, 0)
    only_warning(report, "KernelCacheWarning", "cannot write its kernel cache", "compiled for this process only")


def test_a_file_size_limit_falls_back_to_numpy_with_one_warning(cache):
    def limit():  # `ulimit -f 8`: no file above 8 KiB, anywhere (the compiler's library is ~28 KiB)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
    report = child(cache, preexec_fn=limit)
    assert (report["compiled"], report["failed"]) == (0, 2)
    only_warning(report, "FusionWarning", "could not compile a fused kernel", "fused ops run with numpy")
    assert libraries(cache) == {}


# ---------------------------------------------------------------- tinyflow cache info | clear
def test_cache_info_and_clear_report_and_remove_only_the_caches_files(monkeypatch, tmp_path, capsys):
    from tinyflow.cli import main
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(tmp_path))
    folder = tmp_path / "kernels"
    _fake_entry(folder, "tf_fused_aaaa", b"a" * 3000)
    _fake_entry(folder, "tf_fused_bbbb", b"b" * 1000)
    (folder / "tf_fused_bbbb.json").write_text("{")
    with pytest.raises(compiler.DamagedEntry):
        compiler.lookup("tf_fused_bbbb")
    (folder / ".tf_fused_cccc-build").mkdir()  # an unfinished build
    (folder / "notes.txt").write_text("the user's own file")
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert f"kernel cache: {folder}" in out and "1 kernel," in out
    assert "quarantined: 1 file" in out and "other: 1 file, 1000 B" in out  # bbbb's library, now without entry
    info = compiler.info()
    assert info["kernels"] == 1 and info["kernel_bytes"] == 3000 + (folder / "tf_fused_aaaa.json").stat().st_size
    assert main(["cache", "clear"]) == 0
    assert "removed 4 files" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    assert main(["cache"]) == 0 and "0 kernels" in capsys.readouterr().out


def test_in_the_test_process_a_damaged_entry_costs_one_warning_and_a_compile(monkeypatch, tmp_path):
    monkeypatch.setenv("TINYFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TINYFLOW_FUSION_JIT_AFTER", "0")
    monkeypatch.setattr(compiler, "_loaded", {})
    x = tfl.Placeholder((5000,), name="x")
    y = tfl.exp(x * 0.125 - 1.0) * 3.0
    feed = {x: np.linspace(-1, 1, 5000, dtype=np.float32)}
    expected = tfl.Session(backend="c", optimize=False).run(y, feed)
    np.testing.assert_allclose(tfl.Session(backend="c").run(y, feed), expected, rtol=1e-6)
    (entry,) = (tmp_path / "kernels").glob("*.json")
    entry.write_text("[]")
    monkeypatch.setattr(compiler, "_loaded", {})
    with pytest.warns(compiler.KernelCacheWarning, match="failed verification"):
        np.testing.assert_allclose(tfl.Session(backend="c").run(y, feed), expected, rtol=1e-6)
