"""Decoding speed: modelcore.decoding against Hugging Face MarianMT generate and CTranslate2, side by side.

    .venv/bin/pip install -r requirements/bench.txt   # transformers, ctranslate2 (benchmark only)
    .venv/bin/python bench/decode.py [--repeats 7] [--batches 1,16] [--isa avx2|avx512|auto] [--out ...json]
                                     [--engine "CTranslate2 float32" --engine ...]

Same sizes everywhere: d_model 256, 4 heads, d_ff 1024, 3 + 3 layers, vocabulary 1000,
source length 32, exactly 64 greedy tokens (end token suppressed), batch 1 and 16, 2 threads,
random weights, float32, CPU. Engines run interleaved, in a shuffled order each repeat, so that
load from other processes hits them alike; each figure is the median over repeats, in target
tokens/s, and each goal's ratio the median of the ratios taken inside each repeat.

--isa forces every engine's kernels (torch's, MKL's, oneDNN's, CTranslate2's, modelcore's native step) to AVX2
or AVX-512, so that one machine measures both paths (bench/isa.py); the JSON keeps what each library said it ran.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"  # never reach the hub: the peers are built from a config
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import isa  # noqa: E402  (bench/isa.py)

from modelcore import EncoderDecoder, ModelConfig  # noqa: E402
from modelcore.decoding import DecodeParams, decode  # noqa: E402

THREADS = 2
SIZES = dict(d_model=256, n_heads=4, d_ff=1024, layers=3, vocab=1000, src_len=32, new_tokens=64)
BATCHES = (1, 16)
Engine = Callable[[torch.Tensor], int]  # runs a (B, S) batch of source ids, returns tokens generated


def ours(model: EncoderDecoder, cache: bool, capture: bool, python_step: bool = False) -> Engine:
    """modelcore.decoding.decode through its public API, exactly new_tokens greedy tokens per source.

    python_step: with the native step switched off (MODELCORE_NATIVE=0 during the run), as on a machine
    where it is not taken; both steps give the same tokens.
    """
    n = SIZES["new_tokens"]
    params = DecodeParams(max_len=n, min_len=n, capture_attention=capture)

    def run(src: torch.Tensor) -> int:
        with _native_off() if python_step else contextlib.nullcontext():
            results = decode(model, src.tolist(), params, cache=cache)
        assert all(len(r.ids) == n for r in results)
        return n * len(results)

    return run


@contextlib.contextmanager
def _native_off() -> Iterator[None]:
    """MODELCORE_NATIVE=0 while inside: steppers made then take the Python step."""
    switch = os.environ.get("MODELCORE_NATIVE")
    os.environ["MODELCORE_NATIVE"] = "0"
    try:
        yield
    finally:
        if switch is None:
            del os.environ["MODELCORE_NATIVE"]
        else:
            os.environ["MODELCORE_NATIVE"] = switch


def build_marian(folder: Path) -> torch.nn.Module:
    """A random-weight MarianMT of the same sizes (Post-LN, ReLU, sinusoids, scaled embeddings), saved to folder."""
    from transformers import MarianConfig, MarianMTModel

    V, L = SIZES["vocab"], SIZES["layers"]
    config = MarianConfig(
        vocab_size=V + 1, d_model=SIZES["d_model"], encoder_layers=L, decoder_layers=L,
        encoder_attention_heads=SIZES["n_heads"], decoder_attention_heads=SIZES["n_heads"],
        encoder_ffn_dim=SIZES["d_ff"], decoder_ffn_dim=SIZES["d_ff"], activation_function="relu",
        max_position_embeddings=512, scale_embedding=True, dropout=0.0,
        # Marian appends <pad> as the last id and starts the decoder from it; CTranslate2 drops it again.
        pad_token_id=V, decoder_start_token_id=V, eos_token_id=0, forced_eos_token_id=None,
    )
    torch.manual_seed(0)
    model = MarianMTModel(config).eval()
    model.save_pretrained(folder)
    return model


def hf_generate(model: torch.nn.Module, use_cache: bool) -> Engine:
    n = SIZES["new_tokens"]

    def run(src: torch.Tensor) -> int:
        with torch.inference_mode():
            out = model.generate(
                src, max_new_tokens=n, min_new_tokens=n, do_sample=False, num_beams=1, use_cache=use_cache
            )
        return (out.size(1) - 1) * out.size(0)  # minus the start token

    return run


def _token(i: int) -> str:
    return {0: "</s>", 1: "<unk>"}.get(i, f"t{i}")


def ctranslate2_convert(marian_folder: Path) -> Path:
    """The Marian model converted to CTranslate2 (float32 weights; int8 is quantized from them at load)."""
    from ctranslate2.converters import TransformersConverter

    class _Vocabulary:  # a stand-in tokenizer: the converter reads only the vocabulary
        eos_token, unk_token = "</s>", "<unk>"

        def get_vocab(self) -> dict[str, int]:
            return {**{_token(i): i for i in range(SIZES["vocab"])}, "<pad>": SIZES["vocab"]}

    class _Converter(TransformersConverter):
        def load_tokenizer(self, *args: object, **kwargs: object) -> _Vocabulary:
            return _Vocabulary()

    out = marian_folder / "ct2"
    _Converter(str(marian_folder)).convert(str(out), quantization="float32", force=True)
    return out


def ctranslate2_engine(model_folder: Path, threads: int, compute_type: str, said: dict[str, list[str]]) -> Engine:
    """CTranslate2 with `compute_type` (float32, int8), run in a process of its own that never runs torch.

    CTranslate2 and torch in one process share one OpenMP runtime, and each slows the other:
    after torch has run there, CTranslate2 gave 290-590 target tokens/s at batch 1 against
    about 3000 in a process of its own, and after CTranslate2 has run, torch's threaded GEMMs
    took 2x longer (all measured on this machine). So the conversion (which runs torch) happens
    here, and a child process that only loads and translates serves the runs. It sleeps while
    the other engines run (its threads do not spin when idle: 0.0 s of CPU in 2 s); the pipe
    adds well under a millisecond to a run of 20 ms or more. The child's verbose log (CT2_VERBOSE=1:
    the CPU, the ISA and the backend it chose) goes into said[compute_type].
    """
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=_ctranslate2_serve, args=(theirs, str(model_folder), threads, compute_type),
                              daemon=True)
    process.start()
    ready, log = ours.recv()
    if ready != "ready":
        raise RuntimeError(f"CTranslate2 could not load the converted model: {log}")
    said[compute_type] = log

    def run(src: torch.Tensor) -> int:
        ours.send(src.tolist())
        return ours.recv()

    return run


def _ctranslate2_serve(conn: Connection, model_folder: str, threads: int, compute_type: str) -> None:
    """The CTranslate2 process: load (sending back its verbose log), then translate each batch of ids it is sent."""
    os.environ["CT2_VERBOSE"] = "1"  # before the import: the backend lines are logged once, at load
    with tempfile.NamedTemporaryFile(suffix=".log") as log:
        with isa.stderr_to(log.name):
            import ctranslate2

            translator = ctranslate2.Translator(model_folder, device="cpu", compute_type=compute_type,
                                                inter_threads=1, intra_threads=threads)
        lines = Path(log.name).read_text(errors="replace").splitlines()
    n = SIZES["new_tokens"]
    conn.send(("ready", [line.split("] ", 3)[-1] for line in lines if "[info]" in line]))
    while True:
        try:
            rows = conn.recv()
        except EOFError:  # the benchmark is over
            return
        batch = [[_token(i) for i in row] for row in rows]
        results = translator.translate_batch(
            batch, beam_size=1, max_decoding_length=n, min_decoding_length=n, max_batch_size=0
        )
        conn.send(sum(len(r.hypotheses[0]) for r in results))


def measure(engines: dict[str, Engine], src: torch.Tensor, repeats: int) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Median tokens/s of each engine, and each repeat's seconds.

    Every engine runs once per repeat, in an order shuffled each repeat (seeded): with a fixed
    order, an engine that always follows a heavy one (the uncached runs) inherits its effect on
    caches and clocks, which moved one ratio from 1.12 to 1.73 here.
    """
    times: dict[str, list[float]] = {name: [] for name in engines}
    tokens: dict[str, int] = {}
    for name, run in engines.items():  # warm-up: first-call allocations, lazy inits
        tokens[name] = run(src)
    order = random.Random(src.size(0))
    for repeat in range(repeats):
        print(f"batch {src.size(0)}: repeat {repeat + 1} of {repeats}", file=sys.stderr, flush=True)
        for name in order.sample(list(engines), len(engines)):
            run = engines[name]
            start = time.perf_counter()
            produced = run(src)
            times[name].append(time.perf_counter() - start)
            assert produced == tokens[name] == src.size(0) * SIZES["new_tokens"], (name, produced)
    return {name: tokens[name] / statistics.median(t) for name, t in times.items()}, times


def repeat_ratios(times: dict[str, list[float]], top: str, bottom: str) -> list[float]:
    """top's speed over bottom's, repeat by repeat: runs side by side share the machine's state of the moment.

    This machine's speed drifts by 2x and more within minutes (other tenants of the host); a ratio
    taken inside one repeat cancels most of that, a ratio of two medians does not.
    """
    return [b / t for t, b in zip(times[top], times[bottom], strict=True)]


GOALS = [
    # (batch, numerator, denominator, at least, or at most)
    (1, "modelcore cached", "HF generate cached", 2.0, None),
    (1, "modelcore cached", "CTranslate2 float32", 0.5, None),
    (16, "modelcore cached", "CTranslate2 float32", 1.0, None),
    (16, "modelcore cached", "modelcore uncached", 5.0, None),
    # Step time with capture over plain step time = plain tokens/s over capture tokens/s.
    (1, "modelcore cached", "modelcore cached + attention", None, 1.3),
    (16, "modelcore cached", "modelcore cached + attention", None, 1.3),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "decode.json")
    parser.add_argument("--no-peers", action="store_true", help="only modelcore (peers not installed)")
    parser.add_argument("--threads", type=int, default=THREADS, help="intra-op threads for every engine")
    parser.add_argument("--batches", default=",".join(map(str, BATCHES)),
                        help="batch sizes to run, comma-separated (1 alone: many repeats in little time)")
    parser.add_argument("--isa", choices=isa.CHOICES, default="auto",
                        help="every engine's kernels: AVX2, AVX-512, or each library's own choice (auto)")
    parser.add_argument("--engine", action="append", default=[],
                        help="only this engine, its name as printed (repeat the option for more; default: all); "
                             "on a loaded machine the uncached ones take most of a run")
    args = parser.parse_args()
    isa.enter(args.isa)  # runs this process again with the variables set, before anything has run
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()  # other processes on the machine skew every figure: recorded with them
    torch.manual_seed(0)
    V = SIZES["vocab"]
    config = ModelConfig(
        src_vocab_size=V, tgt_vocab_size=V, d_model=SIZES["d_model"], n_heads=SIZES["n_heads"], d_ff=SIZES["d_ff"],
        n_encoder_layers=SIZES["layers"], n_decoder_layers=SIZES["layers"], dropout=0.0, norm_position="post",
    )
    model = EncoderDecoder(config).eval()
    wanted = set(args.engine) | {"modelcore cached"}  # every ratio is taken against it

    def chosen(name: str) -> bool:
        return not args.engine or name in wanted

    engines: dict[str, Engine] = {
        name: engine for name, engine in (
            ("modelcore cached", ours(model, cache=True, capture=False)),
            ("modelcore uncached", ours(model, cache=False, capture=False)),
            ("modelcore cached + attention", ours(model, cache=True, capture=True)),
            ("modelcore cached, Python step", ours(model, cache=True, capture=False, python_step=True)),
        ) if chosen(name)
    }
    ct2_said: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_peers:
            marian = build_marian(Path(tmp))
            for name, use_cache in (("HF generate cached", True), ("HF generate uncached", False)):
                if chosen(name):
                    engines[name] = hf_generate(marian, use_cache=use_cache)
            converted = ctranslate2_convert(Path(tmp))
            for compute_type in ("float32", "int8"):
                if chosen(f"CTranslate2 {compute_type}"):
                    engines[f"CTranslate2 {compute_type}"] = ctranslate2_engine(converted, args.threads, compute_type,
                                                                                ct2_said)
        generator = torch.Generator().manual_seed(1)
        results: dict[str, dict[str, float]] = {}
        times: dict[str, dict[str, list[float]]] = {}
        for batch in (int(b) for b in args.batches.split(",")):
            src = torch.randint(4, V, (batch, SIZES["src_len"]), generator=generator)  # no special ids
            results[str(batch)], times[str(batch)] = measure(engines, src, args.repeats)
    kernels = {**isa.verified(args.isa), "ctranslate2_verbose": ct2_said}
    report(results, times, args, load_before, kernels)


def report(
    results: dict[str, dict[str, float]], times: dict[str, dict[str, list[float]]], args: argparse.Namespace,
    load_before: tuple[float, ...], kernels: dict[str, object],
) -> None:
    """Print the table, the ratios and the goals; write them as JSON."""
    ratios: dict[str, dict[str, float]] = {}
    for batch, figures in results.items():
        mine = figures["modelcore cached"]
        ratios[batch] = {f"modelcore cached / {name}": mine / v for name, v in figures.items() if name != "modelcore cached"}
        print(f"\nbatch {batch}: target tokens/s (median of {args.repeats})")
        for name, value in figures.items():
            ratio = "" if name == "modelcore cached" else f"   (modelcore cached is {mine / value:.2f}x)"
            print(f"  {name:30s} {value:9.0f}{ratio}")
    goals = []
    for batch, top, bottom, at_least, at_most in GOALS:
        figures = results.get(str(batch), {})
        if top not in figures or bottom not in figures:
            continue
        per_repeat = repeat_ratios(times[str(batch)], top, bottom)
        value = statistics.median(per_repeat)
        met = value >= at_least if at_least is not None else value <= at_most
        goal = f">= {at_least}" if at_least is not None else f"<= {at_most}"
        goals.append({"batch": batch, "ratio": f"{top} / {bottom}", "value": round(value, 3), "goal": goal, "met": met,
                      "per_repeat_min": round(min(per_repeat), 3), "per_repeat_max": round(max(per_repeat), 3)})
        print(f"goal batch {batch}: {top} / {bottom} = {value:.2f} (repeats {min(per_repeat):.2f}-{max(per_repeat):.2f};"
              f" goal {goal}): {'met' if met else 'NOT met'}")
    payload = {
        "sizes": SIZES,
        "threads": args.threads,
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
        "repeats": args.repeats,
        "unit": "target tokens per second (encoder included), median; goal values: median of per-repeat ratios",
        "machine": {"python": platform.python_version(), "torch": torch.__version__, "cpu": platform.processor()
                    or platform.machine(), "cpu_count": os.cpu_count()},
        "kernels": kernels,  # what each engine's libraries said they ran (--isa)
        "tokens_per_s": {batch: {k: round(v, 1) for k, v in f.items()} for batch, f in results.items()},
        "ratios": {batch: {k: round(v, 3) for k, v in r.items()} for batch, r in ratios.items()},
        "goals": goals,
        "per_repeat_ratios": {
            batch: {f"modelcore cached / {name}": [round(r, 3) for r in repeat_ratios(t, "modelcore cached", name)]
                    for name in t if name != "modelcore cached"}
            for batch, t in times.items()
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
