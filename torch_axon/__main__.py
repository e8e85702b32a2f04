"""`python -m torch_axon`: print what the axon runtime sees on this machine."""

import platform
import sys

import torch

import torch_axon


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def main() -> int:
    print(f"torch-axon {torch_axon.__version__}  torch {torch.__version__}  Python {platform.python_version()}")
    try:
        info = torch_axon.runtime_info()
    except Exception as e:  # the runtime could not start: say why, as libaxon said it
        print(f"error: the axon runtime did not start: {e}", file=sys.stderr)
        return 1
    print(f"libaxon {info['version']} (headers {info['header_version']}), {info['device_count']} device(s)\n")
    rows = []
    for d in info["devices"]:
        free, total = d["mem_get_info"]
        rows.append([
            f"axon:{d['index']}", d["name"], d["port"], d["threads"], "on" if d["strict"] else "off",
            _size(d["total_memory"]), _size(free), "%d.%d" % tuple(d["capability"]),
        ])
    print(_table(["device", "name", "port", "threads", "strict", "memory", "free", "capability"], rows))
    # The devices share one host CPU: print its model and features once per distinct value.
    for model, features in sorted({(d["cpu_model"], tuple(d["cpu_features"])) for d in info["devices"]}):
        print(f"\ncpu:          {model or '(unknown)'}")
        print(f"cpu features: {' '.join(features) or '(none detected)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
