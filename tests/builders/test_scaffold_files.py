"""The env package's templates and the names made from an env's name."""

from __future__ import annotations

from mint_envkit.builders.scaffold import ScaffoldNames, scaffold_files


def test_the_names_and_the_templates():
    names = ScaffoldNames.of("units-demo")
    assert names == ScaffoldNames("units-demo", "units_demo", "UnitsDemoEnv")
    assert ScaffoldNames.of("grid_env").env_class == "GridEnv"
    files = scaffold_files(names, "mint-envkit>=9.9")
    assert '"mint-envkit>=9.9"' in files["pyproject.toml"]
    assert all("$" not in text for text in files.values())  # every placeholder filled
    env = files["src/units_demo/env.py"]
    for argument in ("model_name", "batch_size", "group_size", "test_fraction", "seed"):
        assert f"        {argument}: " in env  # documented in load_environment's Args
        assert f"| `{argument}` |" in files["README.md"]
