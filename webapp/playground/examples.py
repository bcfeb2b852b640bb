"""Example sources per task, shown as one-click buttons beside the source box.

Taken from each task's test split (seed 0), so a trained model has never seen them; the
zh-en ones show the time/place reordering the lesson talks about.
"""
from __future__ import annotations

EXAMPLES: dict[str, list[str]] = {
    "zh-en": [
        "我们看见我的猫。",
        "去年她帮助了我。",
        "今天你的医生喝两杯茶。",
        "明天你不会帮助七个男孩。",
        "昨天我在花园里画了三条大鱼。",
        "上个星期九位医生帮助了一个年轻的男孩。",
    ],
    "reverse": ["3 h 9 5 g", "1 8 6 j", "j f a j 4 8 f j"],
    "copy": ["8 4 g j 4", "a 3 0 i b 7 9"],
    "sort": ["g c j c f", "g 1 f 7 2 i 7 b"],
    "add": ["1 8 + 1 7 5 7 4", "6 0 + 6 4 6 9"],
}


def examples_for(task: str) -> list[str]:
    """A few sources this task's models understand (none for an uploaded corpus)."""
    return EXAMPLES.get(task, [])
