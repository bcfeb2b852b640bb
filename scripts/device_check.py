"""The CUDA checks, in one run: modelcore on a GPU against the CPU, figures written as JSON.

    python scripts/device_check.py [--out DIR] [--device cuda|cpu] [--quick]

Run through scripts/device_check.sh on a machine with an NVIDIA GPU (it picks the Python that holds a CUDA
build of torch). Four parts, each recorded whether it passed:

1. equivalence: the same weights on the CPU (float32) and on the device give the same logits (within a
   float32 tolerance), and greedy decoding gives the same tokens, with and without the KV cache;
2. decode: greedy tokens/s at batch 1 and 16 on the device against the CPU (bench/decode.py's sizes);
3. train: bf16 autocast against float32 on the device from the same weights and batches: the loss after
   the same steps, and the time per step;
4. stream: the playground's stream with the interactive worker on the device (bench/stream.py), only when
   the web stack's packages are importable there (they can be carried as wheels: docs/benchmarks.md).

Without CUDA it says so and exits 0, unless --device cpu asks for the same checks on the CPU (a smoke run of
this script's own code: the test suite does that with --quick).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SIZES = dict(d_model=256, n_heads=4, d_ff=1024, layers=3, vocab=1000, src_len=32, new_tokens=64)  # bench/decode.py
QUICK = dict(d_model=32, n_heads=2, d_ff=64, layers=1, vocab=50, src_len=8, new_tokens=6)
LOGIT_TOLERANCE = 1e-3  # float32 on two devices: different kernels sum in different orders


def model_of(sizes: dict[str, int], device: Any, seed: int = 0) -> Any:
    import torch

    from modelcore import EncoderDecoder, ModelConfig

    torch.manual_seed(seed)
    config = ModelConfig(src_vocab_size=sizes["vocab"], tgt_vocab_size=sizes["vocab"], d_model=sizes["d_model"],
                         n_heads=sizes["n_heads"], d_ff=sizes["d_ff"], n_encoder_layers=sizes["layers"],
                         n_decoder_layers=sizes["layers"], dropout=0.0)
    return EncoderDecoder(config).to(device).eval()


def sources(sizes: dict[str, int], batch: int, seed: int = 1) -> list[list[int]]:
    import torch

    generator = torch.Generator().manual_seed(seed)
    return torch.randint(4, sizes["vocab"], (batch, sizes["src_len"]), generator=generator).tolist()


def check_equivalence(sizes: dict[str, int], device: Any) -> dict[str, Any]:
    import torch

    from modelcore.decoding import DecodeParams, decode

    cpu, dev = model_of(sizes, "cpu"), model_of(sizes, device)
    dev.load_state_dict(cpu.state_dict())
    src = torch.tensor(sources(sizes, 4))
    tgt = torch.tensor(sources(sizes, 4, seed=2))[:, : sizes["new_tokens"]]
    with torch.no_grad():
        a, b = cpu(src, tgt), dev(src.to(device), tgt.to(device)).cpu()
    diff = float((a - b).abs().max())
    params = DecodeParams(max_len=sizes["new_tokens"])
    srcs = sources(sizes, 4)
    tokens = {}
    for name, model in (("cpu", cpu), ("device", dev)):
        for cache in (True, False):
            tokens[f"{name}{'' if cache else '_no_cache'}"] = [r.ids for r in decode(model, srcs, params, cache=cache)]
    same = all(ids == tokens["cpu"] for ids in tokens.values())
    return {"ok": diff <= LOGIT_TOLERANCE and same, "max_logit_diff": diff, "tolerance": LOGIT_TOLERANCE,
            "same_greedy_tokens": same, "decodes_compared": sorted(tokens)}


def _tokens_per_s(model: Any, srcs: list[list[int]], n: int, repeats: int, device: Any) -> float:
    import torch

    from modelcore.decoding import DecodeParams, decode

    params = DecodeParams(max_len=n, min_len=n)
    decode(model, srcs, params)  # warm-up: kernels, allocator
    times = []
    for _ in range(repeats):
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
        started = time.perf_counter()
        results = decode(model, srcs, params)
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
        assert all(len(r.ids) == n for r in results)
    return n * len(srcs) / statistics.median(times)


def check_decode(sizes: dict[str, int], device: Any, repeats: int) -> dict[str, Any]:
    cpu, dev = model_of(sizes, "cpu"), model_of(sizes, device)
    rows = []
    for batch in (1, 16):
        srcs = sources(sizes, batch)
        on_cpu = _tokens_per_s(cpu, srcs, sizes["new_tokens"], repeats, "cpu")
        on_dev = _tokens_per_s(dev, srcs, sizes["new_tokens"], repeats, device)
        rows.append({"batch": batch, "cpu_tokens_per_s": round(on_cpu, 1), "device_tokens_per_s": round(on_dev, 1),
                     "device_vs_cpu": round(on_dev / on_cpu, 2)})
    return {"ok": True, "sizes": sizes, "repeats": repeats, "rows": rows}


def check_train(sizes: dict[str, int], device: Any, steps: int) -> dict[str, Any]:
    """bf16 autocast (what modelcore's training step uses on CUDA) against float32, same weights and batches."""
    import torch
    import torch.nn.functional as F

    from modelcore.tokenization import BOS_ID, EOS_ID, PAD_ID
    from modelcore.training.batching import Batch
    from modelcore.training.step import train_step

    generator = torch.Generator().manual_seed(3)
    batches = []
    for _ in range(steps):
        y = torch.randint(4, sizes["vocab"], (16, sizes["src_len"]), generator=generator)
        src = y.flip(1)  # reversal: a task the model can start to learn in a few steps
        bos = torch.full((16, 1), BOS_ID)
        eos = torch.full((16, 1), EOS_ID)
        batches.append(Batch(src, torch.cat([bos, y], 1), torch.cat([y, eos], 1), int(y.numel()) + 16).to(device))
    results = {}
    for name, autocast in (("fp32", False), ("bf16", True)):
        model = model_of(sizes, device).train()
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        losses, times = [], []
        for batch in batches:
            if str(device).startswith("cuda"):
                torch.cuda.synchronize()
            started = time.perf_counter()
            if autocast:
                losses.append(train_step(model, optimizer, batch, lr=1e-3).loss)  # modelcore's step: bf16 on CUDA
            else:
                logits = model(batch.src, batch.tgt_in)  # float32 throughout: modelcore's step would autocast
                loss = F.cross_entropy(logits.transpose(1, 2), batch.tgt_out, ignore_index=PAD_ID)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            if str(device).startswith("cuda"):
                torch.cuda.synchronize()
            times.append(time.perf_counter() - started)
        results[name] = {"first_loss": round(losses[0], 4), "last_loss": round(losses[-1], 4),
                         "step_ms_median": round(1000 * statistics.median(times[1:] or times), 2)}
    gap = abs(results["bf16"]["last_loss"] - results["fp32"]["last_loss"])
    learnt = all(r["last_loss"] < r["first_loss"] for r in results.values())
    return {"ok": learnt and gap <= 0.1 * results["fp32"]["last_loss"] + 0.05, "steps": steps, **results,
            "last_loss_gap": round(gap, 4), "bf16_speedup": round(results["fp32"]["step_ms_median"]
                                                                  / max(results["bf16"]["step_ms_median"], 1e-6), 2)}


def check_stream(out: Path) -> dict[str, Any]:
    """bench/stream.py with the interactive worker on this device, when the web stack can run here."""
    try:
        import celery  # noqa: F401
        import channels  # noqa: F401
        import django  # noqa: F401
    except ImportError as missing:
        return {"ok": None, "skipped": f"the web stack is not installed here ({missing.name}); carry its wheels"}
    env = {**os.environ, "MODELCORE_DEVICE": "cuda", "PYTHONUNBUFFERED": "1"}
    target = out / "stream.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "stream.py"), "--rounds", "2", "--out", str(target)],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=240)
    result: dict[str, Any] = {"ok": run.returncode == 0, "returncode": run.returncode,
                              "output_tail": (run.stdout + run.stderr)[-2000:]}
    if target.exists():
        result["figures"] = json.loads(target.read_text())
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "bench" / "results"))
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (this script's own test)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("device check: torch is not installed for", sys.executable)
        return 1
    if args.device == "cuda" and not torch.cuda.is_available():
        print(f"device check: no CUDA device here (torch {torch.__version__}); nothing to check")
        return 0
    sizes = QUICK if args.quick else SIZES
    torch.set_num_threads(2)  # the CPU side as on the project's 2-core machines
    device = torch.device(args.device)
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0) if args.device == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__, "python": platform.python_version(), "quick": args.quick,
    }
    parts = {
        "equivalence": lambda: check_equivalence(sizes, device),
        "decode": lambda: check_decode(sizes, device, 2 if args.quick else 5),
        "train": lambda: check_train(sizes, device, 6 if args.quick else 50),
        "stream": (lambda: check_stream(args.out)) if args.device == "cuda" else
                  (lambda: {"ok": None, "skipped": "the stream runs on a CUDA device only"}),
    }
    for name, part in parts.items():
        started = time.perf_counter()
        try:
            report[name] = part()
        except Exception as error:  # one part failing still leaves the others' figures
            report[name] = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        report[name]["seconds"] = round(time.perf_counter() - started, 1)
        print(f"device check: {name}: {json.dumps(report[name])[:600]}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "device_check.json").write_text(json.dumps(report, indent=2) + "\n")
    failed = [name for name in parts if report[name].get("ok") is False]
    print(f"device check: {'failed: ' + ', '.join(failed) if failed else 'all passed'}; "
          f"figures in {args.out / 'device_check.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
