"""A package's lazily exported names stay what they name once its submodules load."""
from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import modelcore

ROOT = Path(modelcore.__file__).parent


def lazy_packages() -> list[str]:
    return sorted(".".join(init.relative_to(ROOT.parent).parent.parts) for init in ROOT.rglob("__init__.py")
                  if "lazy_exports" in init.read_text())


def test_no_lazily_exported_name_is_also_a_submodule_of_its_package():
    """Importing a submodule sets the package's attribute of that name to the module: an export of the same name
    would then be the module, not the function (`from modelcore.training import evaluate` gave a module once
    modelcore.training.evaluate had been imported)."""
    packages = lazy_packages()
    assert "modelcore.training" in packages
    for name in packages:
        package = importlib.import_module(name)
        submodules = {info.name for info in pkgutil.iter_modules(package.__path__)}
        assert not submodules & set(package._EXPORTS), name


def test_the_training_evaluate_function_survives_its_modules_import():
    import modelcore.training.evaluation  # noqa: F401  (the module that defines it)
    from modelcore.training import evaluate

    assert callable(evaluate) and evaluate.__module__ == "modelcore.training.evaluation"
