"""Many demonstrations at once on one shared model (as a worker's threads run them): each gets its own answer."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from modelcore.checkpoint import load_model
from modelcore.decoding.steppers import encode_sources
from modelcore.lesson import run_demo
from modelcore.masks import make_src_mask
from modelcore.model.instrument import record
from tests.fixtures.numbers import first_difference

# Different lengths, so that another request's data shows in the shapes as well as in the numbers.
SENTENCES = ["我的猫追了一只老鼠。", "他没有吃饭。", "我们看见我的猫。", "去年我喜欢猫。", "猫追老鼠。",
             "我的狗追了一只猫。", "他喜欢吃饭。", "三个聪明的女孩喝五瓶水。"]
KINDS = ["encoder", "decoder", "residual", "norms"]
REQUESTS = [(kind, {"sentence": sentence, "layer": i % 2, "head": i % 4})
            for i, (kind, sentence) in enumerate((k, s) for s in SENTENCES for k in KINDS)]


@pytest.fixture(scope="module")
def zh_en():
    return load_model("zh-en-post")


def test_concurrent_demonstrations_each_match_the_same_demonstration_run_alone(zh_en):
    alone = [run_demo(kind, zh_en, params) for kind, params in REQUESTS]
    start = threading.Barrier(8)

    def together(request: tuple[str, dict]) -> dict:
        kind, params = request
        try:
            start.wait(timeout=5)  # the first eight start at the same moment
        except threading.BrokenBarrierError:
            pass
        return run_demo(kind, zh_en, params)

    for _ in range(2):  # twice: the interleaving differs from run to run
        with ThreadPoolExecutor(max_workers=8) as pool:
            at_once = list(pool.map(together, REQUESTS))
        start.reset()
        for request, lone, concurrent in zip(REQUESTS, alone, at_once, strict=True):
            difference = first_difference(concurrent, lone)
            assert difference is None, f"{request} differs when run beside others at {difference}"
    # Nothing stays hung on the shared model once every demonstration has finished.
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in zh_en.model.modules())


def test_a_recording_sees_only_its_own_threads_calls(zh_en):
    model = zh_en.model
    short = torch.tensor([zh_en.src_tokenizer.source_ids("猫追老鼠。")])
    long = torch.tensor([zh_en.src_tokenizer.source_ids("我的猫追了一只老鼠。")])
    inside, done = threading.Event(), threading.Event()
    others: list[torch.Tensor] = []

    def other_thread() -> None:
        inside.wait(timeout=10)
        with torch.no_grad():
            others.append(model.encode(long, make_src_mask(long)))  # plain forward while the recording is open
            # and the playground's own capture of encoder attention, also while the recording is open
            _memory, _mask, captured = encode_sources(model, [long[0].tolist()], capture=True)
            others.append(captured[0])
        done.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with torch.no_grad(), record(model) as rec:
        model.encode(short, make_src_mask(short))
        inside.set()
        assert done.wait(timeout=30)
    thread.join()
    S = short.size(1)
    assert [a.shape[-1] for a in rec.encoder_self] == [S] * len(model.encoder.layers)
    assert rec.hidden_states("encoder")[0].shape[1] == S
    assert rec.norms and all(n.in_mean.shape == (1, S) for n in rec.norms.values())
    assert others[1].shape[-1] == long.size(1)  # the capture got its own sentence's weights, not the recording's
