"""A small training loop written for CUDA, using only torch.accelerator and device-generic APIs: no "axon" (or
"cuda") appears below. It uses streams, events, pinned memory, autocast and a checkpoint round trip, and prints
"OK <first loss> <last loss>" when every check holds. tests/test_generic_script.py runs it unchanged on axon."""

import io

import torch
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    acc = torch.accelerator.current_accelerator()
    assert acc is not None, "no accelerator"
    device = torch.device(acc.type, torch.accelerator.current_device_index())
    torch.manual_seed(0)

    x = torch.randn(512, 16)
    y = (x @ torch.randn(16, 1) + 0.1 * torch.randn(512, 1)).float()
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, pin_memory=True)

    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    copy_stream = torch.Stream(device=device)
    amp_dtype = torch.bfloat16

    losses, step_ms = [], []
    for _epoch in range(4):
        for xb, yb in loader:
            assert xb.is_pinned() and yb.is_pinned(), "DataLoader(pin_memory=True) did not pin the batch"
            with copy_stream:  # overlap the host-to-device copy with compute
                xb = xb.to(device, non_blocking=True)
                yb = yb.to(device, non_blocking=True)
            compute = torch.accelerator.current_stream()
            compute.wait_stream(copy_stream)
            xb.record_stream(compute)
            yb.record_stream(compute)

            start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
            start.record()
            with torch.autocast(device.type, dtype=amp_dtype):
                out = model(xb)
                assert out.dtype == amp_dtype, f"autocast left {out.dtype}"
            loss = torch.nn.functional.mse_loss(out.float(), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            end.record()
            end.synchronize()
            step_ms.append(start.elapsed_time(end))
            losses.append(loss.item())

    torch.accelerator.synchronize()
    assert all(t > 0 for t in step_ms), "events measured no time"
    assert losses[-1] < losses[0] * 0.5, f"loss did not fall: {losses[0]} -> {losses[-1]}"

    buf = io.BytesIO()
    torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, map_location=device, weights_only=True)
    restored = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1)).to(device)
    restored.load_state_dict(ckpt["model"])
    for p, q in zip(model.parameters(), restored.parameters()):
        assert q.device == device and torch.equal(p.cpu(), q.cpu()), "checkpoint round trip changed a parameter"
    assert torch.accelerator.memory_allocated() > 0
    print(f"OK {losses[0]:.4f} {losses[-1]:.4f} on {device}")


if __name__ == "__main__":
    main()
