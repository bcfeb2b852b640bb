"""`python -m modelcore train | decode | evaluate | gradflow | sweep`: one-line errors, non-zero exit on bad input.

Torch loads once the input is known to be good: `--help` and a bad option answer at once.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from modelcore.config import CHOICES, PRESETS, ModelConfig, model_overrides
from modelcore.device import DEVICE_CHOICES
from modelcore.experiments.comparisons import COMPARISONS
from modelcore.folder import CheckpointError
from modelcore.tasks import TASK_NAMES, CorpusError, Task, get_task, load_tsv_corpus
from modelcore.training.schedule import SCHEDULES


class UsageError(Exception):
    """Bad input from the command line: reported in one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def _non_negative_int(text: str) -> int:
    return 0 if text.strip() == "0" else _positive_int(text)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _task_option(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, int(raw)
    except ValueError:
        return key, raw


def _add_switches(p: argparse.ArgumentParser, *, layers_default: int | None) -> None:
    p.add_argument("--layers", type=_positive_int, default=layers_default, help="encoder and decoder layers each")
    p.add_argument("--d-model", type=_positive_int)
    p.add_argument("--heads", type=_positive_int)
    p.add_argument("--d-ff", type=_positive_int)
    p.add_argument("--norm-position", choices=CHOICES["norm_position"])
    p.add_argument("--norm", choices=CHOICES["norm"])
    p.add_argument("--no-residual", action="store_true", help="the residual ablation: x = LN(F(x))")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m modelcore", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("train", help="train a model into a folder")
    p.add_argument("--task", help=f"one of: {', '.join(TASK_NAMES)}")
    p.add_argument("--corpus", type=Path, help="a TSV parallel corpus instead of --task")
    p.add_argument("--task-option", type=_task_option, action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--preset", choices=tuple(PRESETS), default="small")
    _add_switches(p, layers_default=None)
    p.add_argument("--dropout", type=_number)
    p.add_argument("--tie-embeddings", action="store_true", help="the output layer shares the decoder's embedding")
    p.add_argument("--share-embeddings", action="store_true",
                   help="one vocabulary for source and target, one embedding for both stacks")
    p.add_argument("--steps", type=_positive_int, default=2000)
    p.add_argument("--batch-size", type=_positive_int, default=64)
    p.add_argument("--no-bucketing", action="store_true", help="mix lengths in each batch")
    p.add_argument("--schedule", choices=SCHEDULES, default="noam")
    p.add_argument("--warmup", type=_positive_int, default=400, help="warmup steps of the noam schedule")
    p.add_argument("--lr-factor", type=_number, default=1.0, help="noam: the paper's rate times this")
    p.add_argument("--lr", type=_number, default=1e-3, help="the constant schedule's rate; the linear schedule's peak")
    p.add_argument("--label-smoothing", type=_number, default=0.1)
    p.add_argument("--clip-grad-norm", type=_number, default=1.0)
    p.add_argument("--eval-every", type=_non_negative_int, default=500)
    p.add_argument("--checkpoint-every", type=_non_negative_int, default=500)
    p.add_argument("--seed", type=_non_negative_int, default=0)
    p.add_argument("--device", choices=DEVICE_CHOICES, default=None)
    p.add_argument("--threads", type=_positive_int, help="torch CPU threads")
    p.add_argument("--no-resume", action="store_true", help="start over even if --out holds a run")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", action="store_true", help="print the final metrics as JSON")

    p = sub.add_parser("decode", help="translate one text with a trained model")
    p.add_argument("--model", required=True, help="a model folder or a shipped model's name")
    p.add_argument("--strategy", choices=("greedy", "beam", "sample"), default="greedy")
    p.add_argument("--beam", type=_positive_int, default=4)
    p.add_argument("--max-len", type=_positive_int)
    p.add_argument("--json", action="store_true", help="one JSON object per step, then a final one")
    p.add_argument("text")

    p = sub.add_parser("evaluate", help="accuracy, exact match and BLEU on a split")
    p.add_argument("--model", required=True)
    p.add_argument("--split", choices=("test", "valid", "train"), default="test")
    p.add_argument("--corpus", type=Path, help="the TSV corpus a corpus model was trained on")
    p.add_argument("--limit", type=_positive_int, help="only the first N pairs")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("gradflow", help="per-layer gradient norms at initialisation")
    _add_switches(p, layers_default=6)
    p.add_argument("--seeds", type=_positive_int, default=3)
    p.add_argument("--vocab", type=_positive_int, default=1000)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("sweep", help="a training comparison with several seeds, each arm's seeds trained stacked")
    p.add_argument("--comparison", choices=COMPARISONS, default="mask")
    p.add_argument("--seeds", type=_positive_int, default=8, help="seeds per arm")
    p.add_argument("--first-seed", type=_non_negative_int, default=0)
    p.add_argument("--steps", type=_positive_int, help="training steps (default: the page's)")
    p.add_argument("--threads", type=_positive_int, default=1,
                   help="torch CPU threads (default 1, as the experiments worker: on busy cores two can be far slower)")
    p.add_argument("--json", action="store_true", help="the whole result, every seed's curve included, as JSON")
    return parser


def _load_task(args: argparse.Namespace, saved: dict[str, Any] | None = None) -> Task:
    if getattr(args, "corpus", None) is not None:
        if not args.corpus.is_file():
            raise ValueError(f"no corpus file at {str(args.corpus)!r}")
        return load_tsv_corpus(args.corpus)
    if saved is not None:
        if saved.get("task") not in TASK_NAMES:
            raise ValueError(f"the model was trained on {saved.get('task')!r}: pass its TSV file with --corpus")
        options = dict(saved.get("task_options") or {})
        return get_task(saved["task"], **options)
    if not args.task:
        raise UsageError("python -m modelcore train: give --task NAME or --corpus FILE")
    # The task's data (its split, its mix) follows --seed unless `--task-option seed=N` fixes it: a second run of one
    # recipe on the same split then differs only in its weights' start and its batches' order.
    return get_task(args.task, **{"seed": args.seed, **dict(args.task_option)})


def _model_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ModelConfig fields the switches set (a switch left out keeps the preset's)."""
    return model_overrides(
        layers=args.layers, d_model=args.d_model, n_heads=args.heads, d_ff=args.d_ff,
        norm_position=args.norm_position, norm=args.norm, dropout=getattr(args, "dropout", None),
        residual=False if args.no_residual else None, tie_embeddings=getattr(args, "tie_embeddings", False) or None,
        share_embeddings=getattr(args, "share_embeddings", False) or None,
    )


def cmd_train(args: argparse.Namespace) -> int:
    from modelcore.training.config import StepInfo, TrainConfig

    task = _load_task(args)
    if args.share_embeddings:
        task.require_one_kind()
    config = TrainConfig(
        preset=args.preset, model=_model_overrides(args), steps=args.steps, batch_size=args.batch_size,
        length_bucketing=not args.no_bucketing, schedule=args.schedule, warmup_steps=args.warmup,
        lr_factor=args.lr_factor, lr=args.lr,
        label_smoothing=args.label_smoothing, clip_grad_norm=args.clip_grad_norm, eval_every=args.eval_every,
        checkpoint_every=args.checkpoint_every, seed=args.seed, device=args.device,
    )

    def progress(info: StepInfo) -> None:
        if info.eval is not None or info.step % 100 == 0 or info.step == info.steps:
            line = f"step {info.step}/{info.steps} loss {info.loss:.4f} lr {info.lr:.2e} {info.tokens_per_s:.0f} tok/s"
            if info.eval is not None:
                line += f" | valid exact {info.eval['exact_match']:.3f} bleu {info.eval['bleu']:.1f}"
            print(line, file=sys.stderr, flush=True)

    # Torch loads here, once the task and the settings are known to be good.
    from modelcore.training.trainer import train

    result = train(task, args.out, config, on_step=None if args.quiet else progress, resume=not args.no_resume)
    test = result.metrics.get("test", {})
    if args.json:
        print(json.dumps({"out": str(result.out_dir), "step": result.step, "test": test}))
    else:
        print(f"saved {result.out_dir} after {result.step} steps: test " + _summary(test))
    return 0


def _summary(metrics: dict[str, Any]) -> str:
    return (
        f"BLEU {metrics['bleu']:.1f}, exact match {metrics['exact_match']:.3f}, "
        f"token accuracy {metrics['token_accuracy']:.3f} (n={metrics['n']})"
    )


def cmd_decode(args: argparse.Namespace) -> int:
    from modelcore.checkpoint import load_model
    from modelcore.decoding import BeamsEvent, DecodeParams, DoneEvent, TokenEvent, decode_stream
    from modelcore.tokenization import EOS_ID

    if not args.text.strip():
        raise ValueError("empty text: nothing to decode")
    loaded = load_model(args.model)
    params = DecodeParams(strategy=args.strategy, beam_size=args.beam, max_len=args.max_len)
    done: DoneEvent | None = None
    for event in decode_stream(loaded, args.text, params):  # the KV-cache engine; DecodeError is a ValueError
        if isinstance(event, DoneEvent):
            done = event
        elif args.json and (isinstance(event, BeamsEvent) or isinstance(event, TokenEvent) and event.id != EOS_ID):
            print(json.dumps(event.to_dict(), ensure_ascii=False), flush=True)
    assert done is not None
    judged = done.to_dict()
    if args.json:
        print(json.dumps({"type": "done", "text": done.text, "steps": len(done.ids), "confidence": judged["confidence"],
                          "warnings": judged["warnings"], "unknown_words": judged["unknown_words"],
                          "coverage": judged["coverage"]},
                         ensure_ascii=False))
    else:
        print(done.text)
        for line in _warning_lines(judged):
            print(line, file=sys.stderr)
    return 0


def _warning_lines(judged: dict[str, Any]) -> list[str]:
    """One line per warning of a done event, for stderr (stdout keeps the translation alone)."""
    lines = {
        "low_confidence": f"warning: low_confidence: the model is unsure of this output (confidence "
                          f"{judged['confidence']:.2f})",
        "repetition": "warning: repetition: the output repeats itself or ran to the length limit",
        "unknown_words": "warning: unknown_words: words never seen in training: " + ", ".join(judged["unknown_words"]),
        "dropped_words": "warning: dropped_words: not in the translation: " + ", ".join(
            dict.fromkeys(w["word"] for w in judged["coverage"] or () if not w["covered"] and w["kind"] != "negation")),
        "negation_lost": "warning: negation_lost: the source says no or not, the translation does not: " + ", ".join(
            w["word"] for w in judged["coverage"] or () if not w["covered"] and w["kind"] == "negation"),
    }
    return [lines[code] for code in judged["warnings"]]


def cmd_evaluate(args: argparse.Namespace) -> int:
    from modelcore.checkpoint import load_model
    from modelcore.training import evaluate

    loaded = load_model(args.model)
    task = _load_task(args, saved=loaded.metrics)
    pairs = getattr(task, args.split)[: args.limit]
    metrics = evaluate(loaded.model, pairs, loaded.src_tokenizer, loaded.tgt_tokenizer)
    if args.json:
        print(json.dumps({**metrics, "split": args.split, "model": str(loaded.path)}))
    else:
        print(f"{loaded.path} {args.split}: " + _summary(metrics))
    return 0


def cmd_gradflow(args: argparse.Namespace) -> int:
    from modelcore.experiments import gradient_norms_at_init

    fields = {"d_model": 256, "n_heads": 4, "d_ff": 1024, "dropout": 0.0, **_model_overrides(args)}
    config = ModelConfig(src_vocab_size=args.vocab, tgt_vocab_size=args.vocab, **fields)
    result = gradient_norms_at_init(config, seeds=tuple(range(args.seeds)))
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"gradient norms at initialisation ({config.norm_position}-{config.norm}, "
          f"residual {'on' if config.residual else 'off'}, mean of {args.seeds} seeds)")
    print(f"{'layer':<12}{'self_attn':>12}{'cross_attn':>12}{'ffn.linear1':>13}{'ffn.linear2':>13}")
    for row in result["layers"]:
        g = row["grad_norms"]
        cross = f"{g['cross_attn']:12.4f}" if "cross_attn" in g else f"{'':>12}"
        print(f"{row['stack'] + ' ' + str(row['index']):<12}{g['self_attn']:12.4f}{cross}"
              f"{g['ffn.linear1']:13.4f}{g['ffn.linear2']:13.4f}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from modelcore.experiments.sweep import MAX_SEEDS, sweep

    if args.seeds > MAX_SEEDS:
        raise ValueError(f"--seeds must be at most {MAX_SEEDS}, got {args.seeds}")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    result = sweep(args.comparison, seeds, steps=args.steps)
    if args.json:
        print(json.dumps(result))
        return 0
    verdict = result["verdict"]
    print(f"{args.comparison}: {len(result['seeds'])} seeds per arm ({seeds.start}..{seeds.stop - 1}), "
          f"{result['steps']} steps; final loss = mean of the last tenth of the steps")
    print(f"{'arm':<22}{'mean':>10}{'± s.e.':>10}{'s.d.':>10}{'lowest in':>11}{'seconds':>9}")
    for arm, figures in zip(result["arms"], verdict["arms"], strict=True):
        print(f"{arm['label']:<22}{figures['mean']:10.4f}{figures['se']:10.4f}{figures['sd']:10.4f}"
              f"{figures['lowest']:>7} of {figures['n']:<2}{arm['seconds']:9.1f}")
    print(f"verdict: {verdict['answer']}: {verdict['text']}" if verdict["reliable"] else f"verdict: {verdict['text']}")
    return 0


COMMANDS = {"train": cmd_train, "decode": cmd_decode, "evaluate": cmd_evaluate, "gradflow": cmd_gradflow,
            "sweep": cmd_sweep}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; bad input ends in one line on stderr and a non-zero status, never a traceback."""
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "threads", None):
            import torch

            torch.set_num_threads(args.threads)
        return COMMANDS[args.command](args)
    except UsageError as error:
        _fail(str(error))
        return 2
    except (CheckpointError, CorpusError, ValueError, OSError) as error:
        _fail(f"error: {error}")
        return 1
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130


def _fail(message: str) -> None:
    print(" ".join(message.split()), file=sys.stderr)
