"""Random numbers on axon: seeding and reproducibility, the 16-byte (seed, offset) state, generator objects, the
distributions' ranges and moments, and independence from thread count and output layout.

Statistical checks use n = 2**17 draws and a 6-sigma bound on the sample mean (a false failure about once in 10**9
runs); the sample standard deviation is checked to 2%.
"""

import json
import re

import pytest
import torch

import torch_axon

from axon_testing import dtype_id, run_python, two_devices

N = 1 << 17
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _draw_all(generator=None, device="axon"):
    """One sample of each native random op, as CPU tensors."""
    kw = {"generator": generator, "device": device}
    return [
        torch.rand(7, **kw).cpu(),
        torch.randn(3, 5, **kw).cpu(),
        torch.randint(-5, 100, (9,), **kw).cpu(),
        torch.rand(5, dtype=torch.float64, **kw).cpu(),
        torch.empty(6, device=device).uniform_(-2, 3, generator=generator).cpu(),
        torch.empty(6, device=device).normal_(1, 4, generator=generator).cpu(),
        torch.empty(8, device=device).bernoulli_(0.3, generator=generator).cpu(),
        torch.empty(8, dtype=torch.int32, device=device).random_(generator=generator).cpu(),
    ]


def _assert_same_draws(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def _state(seed, offset):
    return torch.tensor(list(seed.to_bytes(8, "little") + offset.to_bytes(8, "little")), dtype=torch.uint8)


def _offset():
    return int.from_bytes(bytes(torch.axon.get_rng_state()[8:].tolist()), "little")


# --- seeding -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed_fn", [torch.manual_seed, torch.axon.manual_seed, torch.axon.manual_seed_all],
                         ids=["torch.manual_seed", "torch.axon.manual_seed", "torch.axon.manual_seed_all"])
def test_the_same_seed_gives_the_same_numbers(seed_fn):
    seed_fn(1234)
    first = _draw_all()
    seed_fn(1234)
    _assert_same_draws(first, _draw_all())


def test_different_seeds_give_different_numbers():
    torch.axon.manual_seed(1)
    a = torch.rand(64, device="axon").cpu()
    torch.axon.manual_seed(2)
    assert not torch.equal(a, torch.rand(64, device="axon").cpu())


def test_successive_draws_differ():
    torch.axon.manual_seed(5)
    assert not torch.equal(torch.rand(64, device="axon").cpu(), torch.rand(64, device="axon").cpu())


@two_devices
def test_torch_manual_seed_seeds_every_axon_device():
    torch.manual_seed(77)
    assert [torch.axon.get_rng_state(i)[:8].tolist() for i in range(2)] == [_state(77, 0)[:8].tolist()] * 2
    a = torch.rand(16, device="axon:0").cpu()
    b = torch.rand(16, device="axon:1").cpu()
    assert torch.equal(a, b)  # same seed, same offset


@two_devices
def test_axon_manual_seed_seeds_only_the_current_device():
    torch.axon.manual_seed_all(1)
    with torch.axon.device(1):
        torch.axon.manual_seed(2)
        assert torch.axon.initial_seed() == 2
    assert torch.axon.initial_seed() == 1
    assert torch.equal(torch.axon.get_rng_state(1), _state(2, 0))


def test_seeding_does_not_start_the_runtime():
    proc = run_python("import torch, torch_axon; torch.manual_seed(3); torch.axon.manual_seed_all(4); "
                      "torch.axon.get_rng_state(); print(torch.axon.is_initialized())",
                      AXON_DEVICE_COUNT="2")
    assert proc.stdout.strip() == "False"


def test_initial_seed_returns_the_manual_seed():
    torch.axon.manual_seed(2**40 + 3)
    assert torch.axon.initial_seed() == 2**40 + 3
    torch.rand(3, device="axon")
    assert torch.axon.initial_seed() == 2**40 + 3


def test_seed_picks_a_new_non_deterministic_seed():
    torch.axon.manual_seed(1)
    torch.axon.seed()
    first = torch.axon.initial_seed()
    torch.axon.seed()
    assert torch.axon.initial_seed() != first  # a 64-bit collision is negligible
    assert torch.equal(torch.axon.get_rng_state()[8:], torch.zeros(8, dtype=torch.uint8))


@two_devices
def test_seed_all_gives_every_device_the_same_new_seed():
    torch.axon.manual_seed_all(1)
    torch.axon.seed_all()
    seeds = [torch.axon.get_rng_state(i)[:8] for i in range(2)]
    assert torch.equal(seeds[0], seeds[1])
    assert not torch.equal(seeds[0], _state(1, 0)[:8])


# --- state -------------------------------------------------------------------------------------------------------


def test_rng_state_is_16_bytes_seed_then_offset_little_endian():
    torch.axon.manual_seed(0x0102030405060708)
    state = torch.axon.get_rng_state()
    assert (state.dtype, state.device, state.shape) == (torch.uint8, torch.device("cpu"), (16,))
    assert state.tolist() == [8, 7, 6, 5, 4, 3, 2, 1] + [0] * 8
    torch.rand(10, device="axon")  # 10 float32 draws: 3 Philox blocks of 4
    assert torch.equal(torch.axon.get_rng_state(), _state(0x0102030405060708, 12))


@pytest.mark.parametrize("dtype, numel, blocks", [
    (torch.float32, 1, 1), (torch.float32, 4, 1), (torch.float32, 5, 2), (torch.float16, 9, 3),
    (torch.float64, 1, 1), (torch.float64, 3, 2), (torch.int64, 4, 2), (torch.int8, 17, 5),
], ids=str)
def test_the_offset_advances_by_4_per_philox_block(dtype, numel, blocks):
    torch.axon.manual_seed(0)
    t = torch.empty(numel, dtype=dtype, device="axon")
    for draw in (lambda: t.random_(0, 10), lambda: t.bernoulli_(0.5)) + (
            (lambda: t.uniform_(), lambda: t.normal_()) if dtype.is_floating_point else ()):
        before = _offset()
        draw()
        assert _offset() - before == 4 * blocks
        assert _offset() % 4 == 0


def test_empty_draws_do_not_advance_the_offset():
    torch.axon.manual_seed(0)
    torch.rand(0, device="axon")
    torch.empty(0, 3, device="axon").normal_()
    assert _offset() == 0


def test_set_rng_state_replays_the_sequence():
    torch.axon.manual_seed(9)
    torch.rand(13, device="axon")
    state = torch.axon.get_rng_state()
    first = _draw_all()
    torch.rand(100, device="axon")
    torch.axon.set_rng_state(state)
    _assert_same_draws(first, _draw_all())


def test_set_rng_state_with_an_explicit_offset_skips_ahead():
    torch.axon.manual_seed(21)
    torch.rand(8, device="axon")  # 2 blocks
    expected = torch.rand(8, device="axon").cpu()
    torch.axon.set_rng_state(_state(21, 8))
    assert torch.equal(torch.rand(8, device="axon").cpu(), expected)


def test_get_rng_state_returns_a_copy():
    torch.axon.manual_seed(3)
    state = torch.axon.get_rng_state()
    state.zero_()
    assert torch.equal(torch.axon.get_rng_state(), _state(3, 0))


@pytest.mark.parametrize("bad", [torch.zeros(15, dtype=torch.uint8), torch.zeros(16, dtype=torch.int8),
                                 _state(1, 6)], ids=["15_bytes", "int8", "offset_not_multiple_of_4"])
def test_set_rng_state_rejects_a_malformed_state(bad):
    torch.axon.manual_seed(1)
    with pytest.raises(RuntimeError):
        torch.axon.set_rng_state(bad)
    assert torch.equal(torch.axon.get_rng_state(), _state(1, 0))


@two_devices
def test_get_and_set_rng_state_all_cover_both_devices():
    torch.axon.manual_seed_all(11)
    torch.rand(5, device="axon:1")
    states = torch.axon.get_rng_state_all()
    assert len(states) == 2
    assert torch.equal(states[0], _state(11, 0)) and torch.equal(states[1], _state(11, 8))
    expected = [torch.rand(4, device=f"axon:{i}").cpu() for i in range(2)]
    torch.axon.manual_seed_all(0)
    torch.axon.set_rng_state_all(states)
    assert all(torch.equal(torch.rand(4, device=f"axon:{i}").cpu(), expected[i]) for i in range(2))


def test_fork_rng_restores_the_axon_state():
    torch.axon.manual_seed(4)
    before = torch.axon.get_rng_state()
    with torch.random.fork_rng(device_type="axon"):
        torch.rand(100, device="axon")
    assert torch.equal(torch.axon.get_rng_state(), before)


# --- generator objects -------------------------------------------------------------------------------------------


def test_an_axon_generator_lives_on_axon_and_has_the_default_seed():
    g = torch.Generator(device="axon")
    assert g.device == torch.device("axon", 0)
    assert g.initial_seed() == 67280421310721  # c10::default_rng_seed_val, as CUDA's
    assert g.get_state().shape == (16,)


@two_devices
def test_a_generator_can_be_made_for_the_second_device():
    g = torch.Generator(device="axon:1").manual_seed(6)
    assert g.device == torch.device("axon", 1)
    assert torch.rand(3, device="axon:1", generator=g).device == torch.device("axon", 1)


def test_generator_arguments_draw_from_that_generator_only():
    torch.axon.manual_seed(100)
    default_before = torch.axon.get_rng_state()
    g = torch.Generator(device="axon").manual_seed(42)
    first = _draw_all(generator=g)
    assert torch.equal(torch.axon.get_rng_state(), default_before)
    g.manual_seed(42)
    _assert_same_draws(first, _draw_all(generator=g))
    torch.axon.manual_seed(42)
    _assert_same_draws(first, _draw_all())  # the same (seed, offset) gives the same numbers


def test_generator_state_round_trips():
    g = torch.Generator(device="axon").manual_seed(8)
    torch.rand(9, device="axon", generator=g)
    state = g.get_state()
    expected = torch.randn(5, device="axon", generator=g).cpu()
    h = torch.Generator(device="axon")
    h.set_state(state)
    assert torch.equal(torch.randn(5, device="axon", generator=h).cpu(), expected)
    assert g.get_offset() == h.get_offset() == 12 + 8  # 9 float32 draws: 3 blocks; 5 normals: 2


def test_generator_offset_can_be_set_in_multiples_of_4_only():
    g = torch.Generator(device="axon").manual_seed(1)
    g.set_offset(8)
    assert g.get_offset() == 8
    with pytest.raises(RuntimeError, match="multiple of 4"):
        g.set_offset(6)


def test_a_cpu_generator_for_an_axon_op_is_refused():
    with pytest.raises(RuntimeError, match="Expected a 'axon' device type for generator but found 'cpu'"):
        torch.rand(3, device="axon", generator=torch.Generator())


@pytest.mark.parametrize("op", [
    lambda g: torch.empty(9, device="axon").exponential_(generator=g),
    lambda g: torch.multinomial(torch.ones(10, device="axon"), 5, generator=g),
    lambda g: torch.multinomial(torch.ones(2, 10, device="axon"), 30, replacement=True, generator=g),
    lambda g: torch.normal(torch.zeros(8, device="axon"), torch.ones(8, device="axon"), generator=g),
    lambda g: torch.empty(9, device="axon").cauchy_(generator=g),
    lambda g: torch.empty(9, device="axon").log_normal_(generator=g),
    lambda g: torch.empty(9, dtype=torch.int64, device="axon").geometric_(0.3, generator=g),
], ids=["exponential", "multinomial", "multinomial_replacement", "normal_tensors", "cauchy", "log_normal",
        "geometric"])
def test_random_ops_follow_the_axon_seed(op):
    # Every random op draws from the axon generator (normal with tensors too, which composes normal_).
    torch.axon.manual_seed(3)
    first = op(None).cpu()
    torch.manual_seed(999)  # reseeds the CPU generator too: must not matter...
    torch.axon.manual_seed(3)  # ...once axon is seeded back
    assert torch.equal(op(None).cpu(), first)
    assert _offset() > 0
    g = torch.Generator(device="axon").manual_seed(3)
    from_g = op(g).cpu()
    g.manual_seed(3)
    assert torch.equal(op(g).cpu(), from_g)
    assert not torch.equal(op(g).cpu(), from_g)  # the generator advanced


def test_a_cpu_generator_for_a_fallback_random_op_is_refused():
    with pytest.raises(RuntimeError, match="Expected a 'axon' device type for generator but found 'cpu'"):
        torch.bernoulli(torch.full((4,), 0.5, device="axon"), generator=torch.Generator())


# --- distributions -----------------------------------------------------------------------------------------------


def _check_moments(x, mean, std):
    x = x.double()
    assert abs(x.mean().item() - mean) < 6 * std / N**0.5, x.mean().item()
    assert abs(x.std().item() - std) < 0.02 * std, x.std().item()


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_rand_is_uniform_in_zero_one(dtype):
    torch.axon.manual_seed(0)
    x = torch.rand(N, dtype=dtype, device="axon").cpu()
    assert x.dtype == dtype
    assert x.min() >= 0 and x.max() < 1
    _check_moments(x, 0.5, 12**-0.5)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_uniform_stays_in_from_to(dtype):
    torch.axon.manual_seed(0)
    x = torch.empty(N, dtype=dtype, device="axon").uniform_(-3, 5).cpu()
    assert x.min() >= -3 and x.max() < 5
    _check_moments(x, 1.0, 8 * 12**-0.5)
    narrow = torch.empty(1000, dtype=dtype, device="axon").uniform_(1, 1.001).cpu().double()
    assert narrow.min() >= 1 and narrow.max() < 1.001  # never rounded up to `to`


def test_uniform_with_from_greater_than_to_fails():
    with pytest.raises(RuntimeError, match="uniform_ expects to return a"):
        torch.empty(3, device="axon").uniform_(2, 1)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_randn_is_standard_normal(dtype):
    torch.axon.manual_seed(0)
    x = torch.randn(N, dtype=dtype, device="axon").cpu()
    assert x.dtype == dtype and torch.isfinite(x).all()
    _check_moments(x, 0.0, 1.0)
    assert 0.99 < (x.double().abs() < 3).double().mean().item() / 0.9973 < 1.01


def test_normal_takes_mean_and_std():
    torch.axon.manual_seed(0)
    _check_moments(torch.empty(N, device="axon").normal_(-2, 0.5).cpu(), -2.0, 0.5)
    _check_moments(torch.normal(3.0, 2.0, (N,), device="axon").cpu(), 3.0, 2.0)
    assert torch.equal(torch.empty(10, device="axon").normal_(4, 0).cpu(), torch.full((10,), 4.0))
    with pytest.raises(RuntimeError, match="std >= 0.0"):
        torch.empty(3, device="axon").normal_(0, -1)


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_normal_with_tensor_mean_and_std_is_native_and_broadcasts(dtype):
    torch.axon.manual_seed(0)
    mean = torch.tensor([-2.0, 5.0], dtype=dtype, device="axon").repeat(N // 2).view(N // 2, 2)
    torch_axon.reset_fallback_stats()
    both = torch.normal(mean, torch.tensor([0.5, 2.0], dtype=dtype, device="axon")).cpu()
    mean_only = torch.normal(mean, 3.0).cpu()
    std_only = torch.normal(1.5, torch.full((N,), 0.25, dtype=dtype, device="axon")).cpu()
    assert torch_axon.fallback_stats() == {}, torch_axon.fallback_stats()
    assert both.shape == (N // 2, 2) and both.dtype == dtype and std_only.dtype == dtype
    _check_moments(both[:, 0], -2.0, 0.5)
    _check_moments(both[:, 1], 5.0, 2.0)
    _check_moments(mean_only[:, 1], 5.0, 3.0)
    _check_moments(std_only, 1.5, 0.25)


def test_normal_with_tensors_refuses_what_cpu_refuses():
    zeros = torch.zeros(3, device="axon")
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        torch.normal(zeros, torch.tensor([1.0, -1.0, 1.0], device="axon"))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        torch.normal(zeros, -1.0)
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        torch.normal(0.0, -zeros - 1)
    with pytest.raises(RuntimeError, match="size"):
        torch.normal(torch.zeros(3, device="axon"), torch.ones(4, device="axon"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.uint8, torch.int64, torch.bool],
                         ids=dtype_id)
def test_bernoulli_draws_ones_with_probability_p(dtype):
    torch.axon.manual_seed(0)
    x = torch.empty(N, dtype=dtype, device="axon").bernoulli_(0.3).cpu()
    assert x.dtype == dtype
    assert set(x.double().unique().tolist()) == {0.0, 1.0}
    p = x.double().mean().item()
    assert abs(p - 0.3) < 6 * (0.3 * 0.7 / N) ** 0.5
    assert torch.equal(torch.empty(50, device="axon").bernoulli_(0).cpu(), torch.zeros(50))
    assert torch.equal(torch.empty(50, device="axon").bernoulli_(1).cpu(), torch.ones(50))
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in"):
        torch.empty(3, device="axon").bernoulli_(1.5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64, torch.bool],
                         ids=dtype_id)
def test_bernoulli_with_a_tensor_of_probabilities(dtype):
    # Native: each element compares the same uniform the one-p form draws with its own p, so a p tensor of one value
    # gives that form's numbers; p broadcasts to self's shape as on CPU.
    torch.axon.manual_seed(5)
    want = torch.empty(3, 700, dtype=dtype, device="axon").bernoulli_(0.3).cpu()
    torch.axon.manual_seed(5)
    torch_axon.reset_fallback_stats()
    got = torch.empty(3, 700, dtype=dtype, device="axon").bernoulli_(torch.full((700,), 0.3, device="axon")).cpu()
    assert torch_axon.fallback_stats() == {}
    assert torch.equal(got, want)
    p = torch.rand(N // 4, dtype=torch.float64)
    p[:100], p[100:200] = 0.0, 1.0
    x = torch.bernoulli(p.to("axon", torch.float32)).cpu() if dtype == torch.float32 else \
        torch.empty(N // 4, dtype=dtype, device="axon").bernoulli_(p.to("axon")).cpu()
    assert x.dtype == dtype and set(x.double().unique().tolist()) <= {0.0, 1.0}
    assert not x[:100].any() and x[100:200].all()
    # ones where p is high, zeros where it is low: E[x] - p has mean 0 and variance E[p(1 - p)]
    d = x.double() - p
    assert abs(d.mean().item()) < 6 * ((p * (1 - p)).mean().item() / d.numel()) ** 0.5
    assert x.double()[p > 0.9].mean() > 0.9 and x.double()[p < 0.1].mean() < 0.1


def test_bernoulli_with_a_tensor_refuses_bad_probabilities_and_reads_its_own_memory_safely():
    with pytest.raises(RuntimeError, match=r"bernoulli: p=1.5 is not in \[0, 1\]"):
        torch.bernoulli(torch.tensor([0.5, 1.5, 0.2], device="axon"))
        torch.axon.synchronize()
    with pytest.raises(RuntimeError, match="p must have a floating dtype"):
        torch.empty(3, device="axon").bernoulli_(torch.ones(3, dtype=torch.int64, device="axon"))
    with pytest.raises(RuntimeError, match="but self is on"):
        torch.empty(3, device="axon").bernoulli_(torch.full((3,), 0.5))
    torch.axon.manual_seed(2)
    x = torch.rand(4000, device="axon")
    p = x.clone()
    torch.axon.manual_seed(9)
    x.bernoulli_(x)  # p is self: read from a copy
    torch.axon.manual_seed(9)
    assert torch.equal(x.cpu(), torch.empty(4000, device="axon").bernoulli_(p).cpu())


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8, torch.float32, torch.float64,
                                   torch.float16, torch.bfloat16], ids=dtype_id)
def test_randperm_is_a_native_permutation_that_follows_the_seed(dtype):
    n = {torch.uint8: 256, torch.int16: 32768, torch.float16: 2049, torch.bfloat16: 257}.get(dtype, 100_000)
    torch.axon.manual_seed(4)
    torch_axon.reset_fallback_stats()
    p = torch.randperm(n, device="axon", dtype=dtype)
    assert torch_axon.fallback_stats() == {}
    assert p.device.type == "axon" and p.dtype == dtype and p.shape == (n,)
    assert torch.equal(p.cpu().double().sort().values, torch.arange(n, dtype=torch.float64))
    assert not torch.equal(p.cpu().double(), torch.arange(n, dtype=torch.float64))  # shuffled
    torch.axon.manual_seed(4)
    assert torch.equal(torch.randperm(n, device="axon", dtype=dtype).cpu(), p.cpu())
    g = torch.Generator(device="axon").manual_seed(4)
    assert torch.equal(torch.randperm(n, device="axon", dtype=dtype, generator=g).cpu(), p.cpu())
    assert not torch.equal(torch.randperm(n, device="axon", dtype=dtype, generator=g).cpu(), p.cpu())
    out = torch.empty(3, device="axon", dtype=dtype)
    torch.randperm(7, out=out)
    assert out.shape == (7,) and sorted(out.cpu().tolist()) == list(range(7))
    assert torch.randperm(0, device="axon", dtype=dtype).shape == (0,)


def test_randperm_positions_are_uniform_and_bad_sizes_get_cpus_errors():
    # where 0 lands in randperm(8) over 4000 draws: each position about 500 times
    torch.axon.manual_seed(1)
    where = torch.stack([torch.randperm(8, device="axon") for _ in range(4000)]).argmin(1).cpu()
    counts = torch.bincount(where, minlength=8)
    assert (counts - 500).abs().max() < 6 * (4000 * (1 / 8) * (7 / 8)) ** 0.5, counts
    for n, dtype in ((-1, torch.int64), (3000, torch.float16), (70000, torch.float16), (40000, torch.int16)):
        with pytest.raises(RuntimeError) as cpu_error:
            torch.randperm(n, dtype=dtype)
        with pytest.raises(RuntimeError, match=str(cpu_error.value).split("'")[0][:30]):
            torch.randperm(n, dtype=dtype, device="axon")


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_exponential_has_mean_one_over_lambda_and_is_positive(dtype):
    torch.axon.manual_seed(6)
    torch_axon.reset_fallback_stats()
    x = torch.empty(N, dtype=dtype, device="axon").exponential_(4.0).cpu().double()
    assert torch_axon.fallback_stats() == {}
    assert (x >= 0).all() and x.isfinite().all()
    if dtype in (torch.float32, torch.float64):
        assert (x > 0).all()
    _check_moments(x, 0.25, 0.25)
    for bad, dt in ((0.0, torch.float32), (-1.0, torch.float32), (1.0, torch.int64)):
        with pytest.raises(RuntimeError) as cpu_error:
            torch.empty(3, dtype=dt).exponential_(bad)
        with pytest.raises(RuntimeError, match=str(cpu_error.value)[:40]):
            torch.empty(3, dtype=dt, device="axon").exponential_(bad)


@pytest.mark.parametrize("replacement", [False, True], ids=["without", "with"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=dtype_id)
def test_multinomial_draws_in_proportion_and_never_a_zero_category(dtype, replacement):
    torch.axon.manual_seed(8)
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [5.0, 1.0, 0.0, 4.0]], dtype=dtype)
    torch_axon.reset_fallback_stats()
    if replacement:
        s = torch.multinomial(p.to("axon"), 40000, replacement=True).cpu()
        assert torch_axon.fallback_stats() == {}
        assert s.shape == (2, 40000) and s.dtype == torch.int64
        for row in range(2):
            freq = torch.bincount(s[row], minlength=4).double() / 40000
            want = p[row].double() / p[row].double().sum()
            assert (freq - want).abs().max() < 6 * (0.25 / 40000) ** 0.5, (freq, want)
    else:
        # the first pick follows p; all picks distinct; the zero category only once the others are used up
        first = torch.stack([torch.multinomial(p.to("axon"), 3) for _ in range(3000)]).cpu()
        assert torch_axon.fallback_stats() == {}
        assert first.shape == (3000, 2, 3)
        assert all(len(set(r.tolist())) == 3 for r in first.reshape(-1, 3))
        for row in range(2):
            freq = torch.bincount(first[:, row, 0], minlength=4).double() / 3000
            want = p[row].double() / p[row].double().sum()
            assert (freq - want).abs().max() < 6 * (0.25 / 3000) ** 0.5, (freq, want)
            zero = int((p[row] == 0).nonzero()[0])
            assert not (first[:, row, :] == zero).any()
    one = torch.multinomial(p[0].to("axon"), 1, replacement=replacement).cpu()
    assert one.shape == (1,) and int(one) in (0, 2, 3)


def test_multinomial_refuses_what_cpu_refuses_with_its_messages():
    cases = [(torch.tensor([1.0, -1.0]), 1, False), (torch.tensor([0.0, 0.0]), 1, False),
             (torch.tensor([[1.0, 1.0], [0.0, 0.0]]), 2, True), (torch.tensor([1.0, float("nan")]), 1, True),
             (torch.tensor([1.0, 1.0]), 3, False), (torch.tensor([1, 1]), 1, False), (torch.ones(2, 2, 2), 1, False),
             (torch.ones(3), 0, True)]
    for p, n, replacement in cases:
        with pytest.raises(RuntimeError) as cpu_error:
            torch.multinomial(p, n, replacement)
        with pytest.raises(RuntimeError, match=re.escape(str(cpu_error.value)[:50])):
            torch.multinomial(p.to("axon"), n, replacement)


@pytest.mark.parametrize("dtype, high", [(torch.uint8, 255), (torch.int8, 127), (torch.int16, 2**15 - 1),
                                         (torch.int32, 2**31 - 1), (torch.int64, 2**63 - 1),
                                         (torch.float32, 2**24), (torch.float64, 2**53), (torch.float16, 2**11),
                                         (torch.bfloat16, 2**8), (torch.bool, 1)], ids=str)
def test_random_without_bounds_covers_zero_to_the_dtypes_exact_integer_range(dtype, high):
    torch.axon.manual_seed(0)
    x = torch.empty(4096, dtype=dtype, device="axon").random_().cpu()
    assert x.dtype == dtype
    lo, hi = x.min().item(), x.max().item()
    assert lo >= 0 and hi <= high
    assert hi > high / 2  # not stuck in a sub-range
    assert torch.equal(x, x.trunc()) if dtype.is_floating_point else True
    cpu = torch.empty(4096, dtype=dtype).random_()
    assert cpu.max().item() <= high  # the same bound as PyTorch's CPU random_


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.float32, torch.float16], ids=dtype_id)
def test_random_from_to_covers_the_half_open_range(dtype):
    torch.axon.manual_seed(0)
    x = torch.empty(N, dtype=dtype, device="axon").random_(-4, 6).cpu()
    assert set(x.long().unique().tolist()) == set(range(-4, 6))
    y = torch.empty(1000, dtype=dtype, device="axon").random_(7).cpu()
    assert set(y.long().unique().tolist()) == set(range(7))
    counts = torch.bincount(x.long() + 4)
    expected = N / 10
    assert ((counts - expected).abs() < 6 * expected**0.5).all()


@pytest.mark.parametrize("dtype, args", [(torch.int8, (0, 1000)), (torch.int8, (-200, 0)), (torch.uint8, (-1, 5)),
                                         (torch.bool, (0, 3)), (torch.int8, (200,)),
                                         (torch.float16, (0, 70000))], ids=str)
def test_random_with_bounds_outside_the_dtype_fails_as_on_cpu(dtype, args):
    with pytest.raises(RuntimeError) as cpu_error:
        torch.empty(3, dtype=dtype).random_(*args)
    with pytest.raises(RuntimeError) as axon_error:
        torch.empty(3, dtype=dtype, device="axon").random_(*args)
    assert str(axon_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]


def test_random_to_the_largest_float16_never_rounds_up_to_it():
    # PyTorch moves `to` down to a value below it that float16 can hold, so no draw can round up to 65504.
    torch.axon.manual_seed(0)
    x = torch.empty(N, dtype=torch.float16, device="axon").random_(0, 65504).cpu()
    assert x.max().item() < 65504


def test_random_over_the_whole_int64_range():
    torch.axon.manual_seed(0)
    x = torch.empty(4096, dtype=torch.int64, device="axon").random_(-(2**63), None).cpu()
    assert x.min() < -(2**62) and x.max() > 2**62


@pytest.mark.parametrize("draw", [lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.random_(0, 5),
                                  lambda t: t.bernoulli_(0.5)], ids=["uniform", "normal", "random", "bernoulli"])
def test_drawing_into_an_expanded_tensor_fails_as_on_cpu(draw):
    with pytest.raises(RuntimeError) as cpu_error:
        draw(torch.zeros(1).expand(4))
    with pytest.raises(RuntimeError) as axon_error:
        draw(torch.zeros(1, device="axon").expand(4))
    assert str(axon_error.value).splitlines()[0] == str(cpu_error.value).splitlines()[0]


def test_random_with_from_not_below_to_fails():
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        torch.empty(3, device="axon").random_(5, 5)


def test_randint_covers_a_wide_int64_range():
    torch.axon.manual_seed(0)
    x = torch.randint(-(2**62), 2**62, (N,), device="axon").cpu()
    assert x.min() >= -(2**62) and x.max() < 2**62
    assert x.min() < -(2**61) and x.max() > 2**61
    assert x.unique().numel() == N  # 64 random bits per element: no repeats in practice


# --- independence from threads and layout ------------------------------------------------------------------------

_DIGEST = """
import hashlib, json, torch, torch_axon
torch.axon.manual_seed(2024)
out = {}
for name, make in [("rand", lambda: torch.rand(300_001, device="axon")),
                   ("randn64", lambda: torch.randn(100_003, dtype=torch.float64, device="axon")),
                   ("randn16", lambda: torch.randn(50_001, dtype=torch.float16, device="axon")),
                   ("randint", lambda: torch.randint(0, 1000, (100_000,), device="axon")),
                   ("bernoulli", lambda: torch.empty(70_001, device="axon").bernoulli_(0.25)),
                   ("strided", lambda: torch.empty(301, 257, device="axon").t().uniform_())]:
    t = make().cpu().contiguous()
    out[name] = hashlib.sha256(t.view(torch.uint8).numpy().tobytes()).hexdigest()
out["threads"] = torch.axon.get_device_properties(0).multi_processor_count
print(json.dumps(out))
"""


def test_the_same_seed_gives_the_same_numbers_with_one_or_two_threads():
    one = json.loads(run_python(_DIGEST, AXON_THREADS="1").stdout)
    two = json.loads(run_python(_DIGEST, AXON_THREADS="2").stdout)
    assert (one.pop("threads"), two.pop("threads")) == (1, 2)
    assert one == two


def test_random_numbers_for_more_than_8_dimensions_follow_the_logical_order():
    # A layout no descriptor holds is filled through a contiguous temporary: the same numbers, in the same places.
    torch.axon.manual_seed(8)
    dense = torch.empty((2,) * 10, device="axon").uniform_().cpu()
    torch.axon.manual_seed(8)
    reversed_dims = torch.empty((2,) * 10, device="axon").permute(*range(9, -1, -1)).uniform_()
    assert torch.equal(reversed_dims.cpu(), dense)
    torch.axon.manual_seed(8)
    assert torch.equal(torch.empty((2,) * 10, device="axon").uniform_().cpu(), dense)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=dtype_id)
@pytest.mark.parametrize("draw", [lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.random_(0, 50),
                                  lambda t: t.bernoulli_(0.5)], ids=["uniform", "normal", "random", "bernoulli"])
def test_non_contiguous_outputs_get_the_numbers_of_contiguous_ones(dtype, draw):
    # The numbers depend only on (seed, offset) and each element's logical position.
    torch.axon.manual_seed(17)
    dense = draw(torch.empty(6, 10, dtype=dtype, device="axon")).cpu()
    torch.axon.manual_seed(17)
    transposed = draw(torch.empty(10, 6, dtype=dtype, device="axon").t()).cpu()
    torch.axon.manual_seed(17)
    base = torch.zeros(12, 30, dtype=dtype, device="axon")
    strided = draw(base[::2, ::3])
    assert torch.equal(transposed, dense)
    assert torch.equal(strided.cpu(), dense)
    assert torch.equal(base[1::2].cpu(), torch.zeros(6, 30, dtype=dtype))  # the gaps are untouched


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_cauchy_has_its_quartiles_at_median_plus_minus_sigma(dtype):
    torch_axon.reset_fallback_stats()
    x = torch.empty(N, dtype=dtype, device="axon").cauchy_(median=1.0, sigma=2.0).cpu().double()
    assert torch_axon.fallback_stats() == {}
    for q, at in ((0.25, -1.0), (0.5, 1.0), (0.75, 3.0)):
        assert abs((x < at).double().mean().item() - q) < 0.01


@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_id)
def test_log_normal_is_the_exponential_of_a_normal(dtype):
    torch_axon.reset_fallback_stats()
    x = torch.empty(N, dtype=dtype, device="axon").log_normal_(mean=0.5, std=0.25).cpu().double()
    assert torch_axon.fallback_stats() == {}
    assert (x > 0).all()
    if dtype in (torch.float32, torch.float64):  # the half types' rounding would bias the log's moments
        _check_moments(x.log(), 0.5, 0.25)
    assert abs((x.log() < 0.5).double().mean().item() - 0.5) < 0.01


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64, torch.int32,
                                   torch.int8, torch.uint8], ids=dtype_id)
def test_geometric_counts_trials_to_the_first_success(dtype):
    torch_axon.reset_fallback_stats()
    x = torch.empty(N, dtype=dtype, device="axon").geometric_(0.25).cpu().double()
    assert torch_axon.fallback_stats() == {}
    assert x.min().item() == 1
    assert abs((x == 1).double().mean().item() - 0.25) < 0.01
    _check_moments(x, 4.0, 12 ** 0.5)


def test_cauchy_log_normal_and_geometric_refuse_bad_parameters():
    t = torch.empty(4, device="axon")
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0"):
        t.cauchy_(sigma=0.0)
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0"):
        t.log_normal_(std=-1.0)
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\)"):
        t.geometric_(1.0)
