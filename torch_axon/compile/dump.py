"""AXON_DUMP_DIR: when set, each graph compile writes what it saw and made into a subdirectory of its own:
graph.py (the FX graph as aot_autograd handed it over), partitioned.py (after partitioning), and per partition
<name>.fx.py, <name>.axir (the lowered text), <name>.passes.axir (after the compiler's passes) or <name>.eager.txt
(why it runs eagerly)."""

from __future__ import annotations

import itertools
import os
import threading

_seq = itertools.count()
_lock = threading.Lock()


class Dump:
    """Writes files for one graph compile; does nothing when AXON_DUMP_DIR is unset."""

    def __init__(self, kind: str):
        root = os.environ.get("AXON_DUMP_DIR")
        self.dir = None
        if root:
            with _lock:
                n = next(_seq)
            self.dir = os.path.join(root, f"{os.getpid()}_{n:04d}_{kind}")
            os.makedirs(self.dir, exist_ok=True)

    def write(self, name: str, text: str) -> None:
        if self.dir is None:
            return
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def graph(self, name: str, gm) -> None:
        if self.dir is not None:
            self.write(name, gm.print_readable(print_output=False))
