"""axon and os.fork, with torch.cuda's semantics: the runtime's threads do not survive a fork, so a child forked after
the runtime started refuses axon work with a clear error (and never hangs); a child forked before it ever started
uses axon normally. Every child runs under a timeout."""

import json
import multiprocessing as mp

import pytest
import torch

TIMEOUT = 60
BAD_FORK = "Cannot re-initialize axon in forked subprocess"


def _run_in_fork(fn) -> list:
    """Run fn(put) in a child made with the 'fork' start method; returns what it put, then its exit code."""
    ctx = mp.get_context("fork")
    queue = ctx.SimpleQueue()

    def target():
        try:
            fn(queue.put)
        except BaseException as e:  # noqa: BLE001  (reported, not lost)
            queue.put(("uncaught", type(e).__name__, str(e)))
        queue.put("done")

    p = ctx.Process(target=target)
    p.start()
    p.join(TIMEOUT)
    if p.is_alive():
        p.kill()
        p.join()
        pytest.fail(f"the forked child hung for {TIMEOUT} s")
    out = []
    while not queue.empty():
        out.append(queue.get())
    out.append(p.exitcode)
    return out


def _attempt(put, name, fn):
    try:
        fn()
    except RuntimeError as e:
        put((name, "RuntimeError", str(e)))
    else:
        put((name, "ok", ""))


@pytest.fixture
def started():
    torch.zeros(1, device="axon")
    assert torch.axon.is_initialized()


def test_a_child_forked_after_start_cannot_touch_axon(started):
    def child(put):
        _attempt(put, "tensor", lambda: torch.zeros(2, device="axon"))
        _attempt(put, "to", lambda: torch.ones(2).to("axon:1"))
        _attempt(put, "synchronize", lambda: torch.axon.synchronize())
        _attempt(put, "stream", lambda: torch.axon.Stream())
        _attempt(put, "event", lambda: torch.axon.Event().record())
        _attempt(put, "accelerator.synchronize", lambda: torch.accelerator.synchronize())
        _attempt(put, "init", lambda: torch.axon.init())

    *results, done, code = _run_in_fork(child)
    assert (done, code) == ("done", 0)
    assert [r[0] for r in results] == ["tensor", "to", "synchronize", "stream", "event", "accelerator.synchronize",
                                       "init"]
    for name, kind, message in results:
        assert kind == "RuntimeError", name
        assert message.startswith(BAD_FORK), (name, message)
        assert "spawn" in message, (name, message)


def test_a_child_forked_after_start_reports_a_bad_fork_but_still_counts_devices(started):
    def child(put):
        put([torch.axon.is_initialized(), torch.axon._is_in_bad_fork(), torch.axon.device_count(),
             torch.axon.is_available(), torch.axon.memory_allocated()])

    result, done, code = _run_in_fork(child)
    assert (done, code) == ("done", 0)
    assert result == [False, True, 2, True, 0]  # as torch.cuda: uninitialized, no memory to report


def test_a_child_forked_after_start_may_drop_inherited_tensors(started):
    x = torch.ones(1000, device="axon")
    pinned = torch.ones(1000).pin_memory()

    def child(put):
        nonlocal x, pinned
        del x
        del pinned
        import gc
        gc.collect()
        put("dropped")

    assert _run_in_fork(child) == ["dropped", "done", 0]
    torch.testing.assert_close(x.cpu(), torch.ones(1000), rtol=0, atol=0)  # the parent's copy is untouched
    assert pinned.is_pinned()


def test_the_parent_keeps_working_after_forking(started):
    _run_in_fork(lambda put: put("child"))
    src = torch.arange(100.0)
    torch.testing.assert_close(src.to("axon").cpu(), src, rtol=0, atol=0)
    torch.axon.synchronize()


_FORK_BEFORE_START = """
import json, multiprocessing as mp, torch

def child(q):
    try:
        src = torch.arange(10.0)
        x = src.to("axon:1")
        y = torch.empty_like(x)
        y.copy_(x)
        torch.axon.synchronize(1)
        q.put(["ok", y.cpu().tolist(), torch.axon.is_initialized(), torch.axon._is_in_bad_fork()])
    except BaseException as e:
        q.put(["error", repr(e)])

torch.axon.device_count(); torch.axon.set_device(1); torch.axon.manual_seed(0)  # none of these starts the runtime
assert not torch.axon.is_initialized()
ctx = mp.get_context("fork")
q = ctx.SimpleQueue()
p = ctx.Process(target=child, args=(q,))
p.start()
p.join(TIMEOUT)
alive = p.is_alive()
if alive:
    p.kill()
result = q.get() if not q.empty() else None
parent = torch.ones(3, device="axon").cpu().tolist()  # the parent can still start its own runtime
print(json.dumps({"child": result, "exitcode": p.exitcode, "hung": alive, "parent": parent}))
""".replace("TIMEOUT", str(TIMEOUT))


def test_a_child_forked_before_the_runtime_started_can_use_axon(python):
    proc = python(_FORK_BEFORE_START, timeout=TIMEOUT + 60)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert not report["hung"]
    assert report["exitcode"] == 0
    assert report["child"] == ["ok", [float(i) for i in range(10)], True, False]
    assert report["parent"] == [1.0, 1.0, 1.0]
