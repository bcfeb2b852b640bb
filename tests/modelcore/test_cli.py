"""`python -m modelcore`: useful answers on the shipped models, one clean line on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from modelcore.checkpoint import SHIPPED_DIR, load_model
from modelcore.cli import main


@dataclass
class Finished:
    """What a command printed and the status it ended with (as subprocess.CompletedProcess names them)."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., Finished]:
    """cli(*args): `python -m modelcore ARGS` run in this process (its `main`, which the module's entry calls with
    the command line): the same code without a new interpreter importing torch each time. The command's thread count
    is put back afterwards. `test_the_module_entry_...` runs real processes."""
    import torch

    def run(*args: str) -> Finished:
        capsys.readouterr()
        threads = torch.get_num_threads()
        try:
            status = main(list(args))
        except SystemExit as leaving:  # argparse's own exits
            status = leaving.code if isinstance(leaving.code, int) else 1
        finally:
            torch.set_num_threads(threads)
        out, err = capsys.readouterr()
        return Finished(status, out, err)

    return run


def test_the_module_entry_exits_with_the_status_and_lines_main_gives(tmp_path: Path) -> None:
    """`python -m modelcore` is `main` with the command line: its status is the process's, its lines the process's."""
    def process(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "modelcore", *args], capture_output=True, text=True,
                              timeout=300, cwd=Path(__file__).resolve().parents[2])

    bad = process("decode", "--model", str(tmp_path / "missing"), "hello")
    assert bad.returncode == 1 and bad.stdout == "" and "Traceback" not in bad.stderr
    assert bad.stderr.count("\n") == 1 and "no model folder" in bad.stderr
    usage = process("sweep", "--seeds", "0")
    assert usage.returncode == 2 and usage.stderr.count("\n") == 1 and "expected a number >= 1" in usage.stderr
    good = process("decode", "--model", "reverse", "3 a 7 j 0 0 b")
    assert good.returncode == 0 and good.stdout == "b 0 0 j 7 a 3\n" and good.stderr == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "required: command"),
        (("train", "--task", "nope", "--out", "{tmp}"), "unknown task 'nope'"),
        (("train", "--task", "reverse", "--out", "{tmp}", "--steps", "many"), "expected a whole number"),
        (("train", "--task", "reverse", "--out", "{tmp}", "--steps", "0"), "expected a number >= 1"),
        (("train", "--task", "reverse", "--out", "{tmp}", "--heads", "3", "--d-model", "64"), "divisible"),
        (("train", "--corpus", "{tmp}/none.tsv", "--out", "{tmp}"), "no corpus file"),
        (("decode", "--model", "{tmp}/missing", "hello"), "no model folder"),
        (("decode", "--model", "reverse", "   "), "empty text"),
        (("decode", "--model", "reverse", "--max-len", "-1", "1 2"), "--max-len"),
        (("evaluate", "--model", "no-such-model"), "no shipped model"),
        (("gradflow", "--layers", "two"), "expected a whole number"),
        (("train", "--task", "zh-en", "--out", "{tmp}", "--share-embeddings"), "cannot share one vocabulary"),
        (("sweep", "--seeds", "0"), "expected a number >= 1"),
        (("sweep", "--seeds", "65"), "--seeds must be at most 64"),
        (("sweep", "--comparison", "nope"), "invalid choice: 'nope'"),
        (("sweep", "--steps", "-3"), "--steps"),
    ],
)
def test_bad_input_gives_one_line_and_a_failure_status(cli, tmp_path: Path, args, message) -> None:
    result = cli(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert message in result.stderr
    assert result.stdout == ""


def test_decode_reverses_with_the_shipped_model(cli) -> None:
    result = cli("decode", "--model", "reverse", "3 a 7 j 0 0 b")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "b 0 0 j 7 a 3\n"


def test_decode_json_emits_one_frame_per_step_then_done(cli) -> None:
    result = cli("decode", "--model", "reverse", "--json", "1 2 3 4 5")
    frames = [json.loads(line) for line in result.stdout.splitlines()]
    tokens, done = frames[:-1], frames[-1]
    assert [f["seq"] for f in tokens] == [0, 1, 2, 3, 4]
    assert [f["token"] for f in tokens] == ["5", "4", "3", "2", "1"]
    assert all(f["type"] == "token" and isinstance(f["id"], int) and 0.5 < f["prob"] <= 1 for f in tokens)
    assert {k: done[k] for k in ("type", "text", "steps", "warnings")} == {
        "type": "done", "text": "5 4 3 2 1", "steps": 5, "warnings": []}
    assert 0.5 < done["confidence"] <= 1


def test_decode_translates_chinese(cli) -> None:
    result = cli("decode", "--model", "zh-en-pre", "我喜欢猫。")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "i like cats .\n"
    assert result.stderr == ""  # nothing to warn of


def test_decode_json_ends_with_the_confidence_and_warnings_of_a_loop(cli) -> None:
    result = cli("decode", "--model", "zh-en-post", "--json", "我的狗不会游泳。")  # 游泳: outside its grammar
    assert result.returncode == 0, result.stderr
    done = json.loads(result.stdout.splitlines()[-1])
    assert done["type"] == "done" and done["text"].startswith("my dog will not not not")
    assert "repetition" in done["warnings"]
    assert 0 <= done["confidence"] <= 1


def test_decode_prints_the_warnings_on_stderr_and_only_the_text_on_stdout(cli) -> None:
    result = cli("decode", "--model", "zh-en-post", "他哥哥在北京工作。")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1 and "warning" not in result.stdout
    lines = result.stderr.splitlines()
    assert "warning: unknown_words: words never seen in training: 哥哥, 北京, 工作" in lines
    assert any(line.startswith("warning: low_confidence:") for line in lines)


def test_evaluate_reproduces_the_shipped_figures(cli) -> None:
    result = cli("evaluate", "--model", "reverse", "--json")
    figures = json.loads(result.stdout)
    assert {"bleu", "exact_match", "token_accuracy", "n"} <= set(figures)
    shipped = load_model("reverse").metrics["test"]
    assert figures["n"] == shipped["n"] == 1000
    for key in ("bleu", "exact_match", "token_accuracy"):
        assert figures[key] == pytest.approx(shipped[key], abs=1e-6)
    assert figures["exact_match"] >= 0.99


@pytest.mark.parametrize("name", ["zh-en-post", "zh-en-pre", "reverse"])
def test_shipped_models_meet_their_targets_and_size(name: str) -> None:
    metrics = load_model(name).metrics["test"]
    if name == "reverse":
        assert metrics["exact_match"] >= 0.99
    else:
        assert metrics["bleu"] >= 90
    assert (SHIPPED_DIR / name / "model.safetensors").stat().st_size <= 5 * 2**20
    calibrated = ["calibration.json"] if name != "reverse" else []  # scripts/confidence_calibration.py
    assert sorted(p.name for p in (SHIPPED_DIR / name).iterdir()) == [
        *calibrated, "config.json", "metrics.json", "model.safetensors", "tokenizer.json"
    ]


def test_the_two_zh_en_models_differ_only_in_the_norm_position() -> None:
    post, pre = load_model("zh-en-post").config.to_dict(), load_model("zh-en-pre").config.to_dict()
    assert post.pop("norm_position") == "post" and pre.pop("norm_position") == "pre"
    assert post == pre


def test_gradflow_json_shape(cli) -> None:
    result = cli("gradflow", "--layers", "2", "--d-model", "32", "--heads", "2", "--seeds", "1", "--json")
    data = json.loads(result.stdout)
    assert data["config"]["n_encoder_layers"] == 2
    assert [(r["stack"], r["index"]) for r in data["layers"]] == [
        ("encoder", 0), ("encoder", 1), ("decoder", 0), ("decoder", 1)
    ]
    for row in data["layers"]:
        expected = {"self_attn", "ffn.linear1", "ffn.linear2"} | ({"cross_attn"} if row["stack"] == "decoder" else set())
        assert expected <= set(row["grad_norms"]) and all(v > 0 for v in row["grad_norms"].values())


def test_train_writes_a_model_folder_that_decode_reads(cli, tmp_path: Path) -> None:
    out = tmp_path / "copy"
    result = cli(
        "train", "--task", "copy", "--task-option", "n_train=200", "--task-option", "n_valid=10",
        "--task-option", "n_test=10", "--out", str(out), "--preset", "tiny", "--steps", "3", "--quiet", "--json",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["test"]["n"] == 10
    assert {"config.json", "model.safetensors", "tokenizer.json", "metrics.json"} <= {p.name for p in out.iterdir()}
    decoded = cli("decode", "--model", str(out), "1 2 3")
    assert decoded.returncode == 0 and decoded.stdout.endswith("\n")


def test_train_with_three_way_tying_keeps_one_vocabulary_and_one_matrix(cli, tmp_path: Path) -> None:
    out = tmp_path / "tied"
    result = cli(
        "train", "--task", "reverse", "--task-option", "n_train=200", "--task-option", "n_valid=10",
        "--task-option", "n_test=10", "--out", str(out), "--preset", "tiny", "--steps", "3", "--quiet",
        "--share-embeddings", "--tie-embeddings",
    )
    assert result.returncode == 0, result.stderr
    loaded = load_model(out)
    model = loaded.model
    assert loaded.config.share_embeddings and loaded.config.tie_embeddings
    assert model.src_embed.embedding.weight is model.tgt_embed.embedding.weight is model.generator.weight
    assert loaded.src_tokenizer.hf.get_vocab() == loaded.tgt_tokenizer.hf.get_vocab()
    untied = sum(p.numel() for p in model.parameters()) + 2 * model.generator.weight.numel()
    assert untied == sum(p.numel() for p in model.state_dict().values())  # three matrices saved, one trained
    assert cli("decode", "--model", str(out), "1 2 3").returncode == 0


def test_a_second_seed_of_a_recipe_can_keep_the_first_seed_s_data(cli, tmp_path: Path) -> None:
    """--seed sets the weights' start, the batches' order and, unless a task option fixes it, the task's data."""
    args = ("train", "--task", "reverse", "--task-option", "n_train=200", "--task-option", "n_valid=10",
            "--task-option", "n_test=10", "--preset", "tiny", "--steps", "3", "--quiet", "--seed", "1")
    assert cli(*args, "--out", str(tmp_path / "same"), "--task-option", "seed=0").returncode == 0
    assert cli(*args, "--out", str(tmp_path / "own")).returncode == 0
    same, own = load_model(tmp_path / "same").metrics, load_model(tmp_path / "own").metrics
    assert same["task_options"]["seed"] == 0 and own["task_options"]["seed"] == 1
    assert same["train"]["seed"] == own["train"]["seed"] == 1


def test_sweep_gives_each_seed_its_lone_run_s_curve_and_a_verdict(cli) -> None:
    """Seed 1 of a 3-seed sweep is the lesson's own lone run with seed 1, within 1e-4 at every step."""
    from modelcore.experiments import torch_threads
    from modelcore.lesson import run_training

    result = cli("sweep", "--comparison", "mask", "--seeds", "3", "--steps", "6", "--threads", "1", "--json")
    assert result.returncode == 0, result.stderr
    sweep = json.loads(result.stdout)
    assert sweep["seeds"] == [0, 1, 2] and [a["label"] for a in sweep["arms"]] == ["causal mask", "no mask"]
    with torch_threads(1):
        lone = run_training("mask", {"seed": 1, "steps": 6})
    for stacked, alone in zip(sweep["arms"], lone["arms"], strict=True):
        curve = stacked["runs"][1]["loss"]
        assert len(curve) == 6 and all(abs(a - b) <= 1e-4 * b for a, b in zip(curve, alone["loss"], strict=True))
    verdict = sweep["verdict"]
    assert verdict["seeds"] == 3 and verdict["answer"] in ("causal mask", "no mask", "no reliable difference")

    table = cli("sweep", "--comparison", "mask", "--seeds", "2", "--steps", "3", "--threads", "1")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("mask: 2 seeds per arm") and lines[-1].startswith("verdict: ")
    assert any(line.startswith("causal mask") for line in lines) and any(line.startswith("no mask") for line in lines)
