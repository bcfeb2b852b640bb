"""What attention buys and costs, measured on the shipped zh-en model: the gradient's path, n², the KV cache."""
from __future__ import annotations

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

from modelcore.checkpoint import load_model
from modelcore.decoding.steppers import CachedStepper, RecomputeStepper
from modelcore.experiments import torch_threads
from modelcore.lesson import run_demo
from modelcore.lesson.demos import source_of
from modelcore.masks import make_src_mask
from modelcore.tokenization import BOS_ID

SENTENCE = "我的猫追了一只老鼠。"


@pytest.fixture(scope="module")
def zh_en():
    return load_model("zh-en-post")


@pytest.fixture(scope="module")
def recurrence(zh_en):
    with torch_threads(1):
        return run_demo("recurrence", zh_en, {"sentence": SENTENCE})


def test_the_gradient_reaches_the_first_input_through_attention_and_fades_through_recurrence(recurrence):
    first = recurrence["first"]
    assert recurrence["lengths"] == [4, 8, 16, 32, 64]
    assert all(a > b for a, b in zip(first["rnn"], first["rnn"][1:], strict=False))  # every step takes more away
    assert all(a > b for a, b in zip(first["gru"], first["gru"][1:], strict=False))
    assert first["rnn"][-1] < 1e-15 and first["gru"][-1] < 1e-8
    assert min(first["encoder"]) > 1e-2  # one attention per layer, however far: nothing multiplies it away
    assert first["encoder"][-1] > 1e10 * first["rnn"][-1]
    assert recurrence["sequential"] == {"encoder": 3, "rnn": [4, 8, 16, 32, 64]}
    profile = recurrence["profile"]
    assert len(profile["encoder"]) == 64 and profile["rnn"][-1] > 1e15 * profile["rnn"][0]


def test_the_encoders_gradient_is_the_models_own_jacobian(zh_en, recurrence):
    model = zh_en.model.eval()
    ids = zh_en.src_tokenizer.source_ids(SENTENCE)[:-1]
    src = torch.tensor([ids[:8]])
    x = model.positional(model.src_embed(src)).detach()
    jacobian = torch.autograd.functional.jacobian(lambda x: model.encoder(x, make_src_mask(src))[0, -1], x)
    assert float(jacobian[:, 0, 0].norm()) == pytest.approx(recurrence["first"]["encoder"][1], rel=5e-3)  # three significant figures
    assert float(jacobian[:, 0, -1].norm()) == pytest.approx(recurrence["own"][1], rel=5e-3)  # three significant figures


def test_attention_weights_take_n_squared_memory_and_their_time_outgrows_the_ffns(zh_en):
    with torch_threads(1):
        cost = run_demo("cost", zh_en, {"sentence": SENTENCE})
    n = cost["lengths"]
    assert cost["weights_bytes"] == [4 * k * k * 4 for k in n]  # h = 4 heads of n × n float32 weights
    assert cost["weights_bytes"][n.index(512)] == 4 * 2**20 and cost["weights_bytes"][n.index(1024)] == 16 * 2**20
    i, j = n.index(256), n.index(1024)
    attention, ffn = cost["attention_ms"][j] / cost["attention_ms"][i], cost["ffn_ms"][j] / cost["ffn_ms"][i]
    # 4 × the length is 16 × the n² work and 4 × the FFN's (the counts below say so exactly); the clock, shared with
    # whatever else the machine runs, is only asked for what the page says of it: attention's time outgrows the FFN's
    # (7.9 against a former bound of 8 beside a full test run on two cores).
    assert attention > ffn, (attention, ffn)
    ops = cost["multiply_adds"]
    assert cost["crossover"] == 512 and ops["n_squared"][n.index(512)] == ops["linear"][n.index(512)]
    assert ops["n_squared"][j] > ops["linear"][j] and ops["n_squared"][i] < ops["linear"][i]


def test_with_the_cache_a_step_stays_level_while_recomputing_the_prefix_slows_down(zh_en):
    with torch_threads(1):
        cache = run_demo("cache", zh_en, {"sentence": SENTENCE})
    assert cache["steps"] == 128 and len(cache["cached_ms"]) == len(cache["recompute_ms"]) == 128
    # Times are the machine's, under whatever else runs: the test holds the demonstration to the wide gaps (several
    # times over), and the next test counts the arithmetic behind the trend its chart draws.
    late = cache["late"]
    assert late["cached"] < late["recompute"] / 2 and cache["total_ms"]["cached"] < cache["total_ms"]["recompute"]
    # 1 KiB per position and layer (a key and a value of 128 float32 numbers), source positions included.
    sizes = cache["cache_bytes"]
    assert {b - a for a, b in zip(sizes, sizes[1:], strict=False)} == {3 * 1024}
    assert sizes[-1] == (128 + len(cache["tokens"])) * 3 * 1024 == 417 * 1024


def _counted_steps(stepper, src: list[int], steps: int) -> list[int]:
    """Floating-point operations of each step as torch counts them (the CPU's fused attention kernel included)."""
    formula = {torch.ops.aten._scaled_dot_product_flash_attention_for_cpu:
               lambda q, k, v, *args, out_shape=None, **kwargs: sdpa_flop_count(q, k, v)}
    stepper.reserve(1, steps + 1)
    stepper.add_sources([src], steps + 1)
    token, counts = torch.tensor([BOS_ID]), []
    with torch.no_grad():
        for _ in range(steps):
            with FlopCounterMode(display=False, custom_mapping=formula) as counter:
                logits = stepper.step(token)
            counts.append(counter.get_total_flops())
            token = logits.argmax(-1)
    return counts


def test_the_cache_demonstrations_trend_is_the_arithmetic_each_step_does(zh_en):
    """Recomputing runs the decoder over the whole prefix (work grows with every token); the cache runs one position
    and only its attention reads further back."""
    src = source_of(zh_en, SENTENCE)[0][0].tolist()
    model = zh_en.model.eval()
    recompute = _counted_steps(RecomputeStepper(model), src, 64)
    cached = _counted_steps(CachedStepper(model, native=False), src, 64)
    assert all(a < b for a, b in zip(recompute, recompute[1:], strict=False))
    assert recompute[-1] > 15 * recompute[0]  # 64 positions against 1 (the encoder output is not recomputed)
    assert all(a <= b for a, b in zip(cached, cached[1:], strict=False)) and cached[-1] < 1.25 * cached[0]
    assert cached[0] < recompute[0] and cached[-1] < recompute[-1] / 50
