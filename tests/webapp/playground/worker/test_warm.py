"""Models stay loaded in a worker process: one load per folder and checkpoint, the least used dropped first."""
from __future__ import annotations

from tests.fixtures.models import make_model_folder
from webapp.playground.worker.warm import WarmModels


def test_a_model_is_loaded_once_and_a_new_checkpoint_loads_anew(tmp_path):
    from modelcore.checkpoint import WEIGHTS_FILE, file_hash

    folder = make_model_folder(tmp_path / "m", seed=0)
    warm = WarmModels(capacity=2, device="cpu")
    first = warm.get(str(folder), file_hash(folder / WEIGHTS_FILE))
    assert warm.get(str(folder), first.checkpoint_hash) is first
    make_model_folder(folder, seed=1)  # retrained in place: new weights, new hash
    second = warm.get(str(folder), file_hash(folder / WEIGHTS_FILE))
    assert second is not first and second.checkpoint_hash != first.checkpoint_hash


def test_past_its_capacity_the_least_recently_used_model_goes(tmp_path):
    folders = [make_model_folder(tmp_path / name, seed=i) for i, name in enumerate("abc")]
    warm = WarmModels(capacity=2, device="cpu")
    a = warm.get(str(folders[0]), "ha")
    warm.get(str(folders[1]), "hb")
    assert warm.get(str(folders[0]), "ha") is a  # a is now the most recent
    warm.get(str(folders[2]), "hc")
    assert [path.rsplit("/", 1)[1] for path, _ in warm.keys()] == ["a", "c"]
