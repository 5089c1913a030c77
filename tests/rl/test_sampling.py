"""The sampling phase's helpers: renderers built before the first step needs them."""

from __future__ import annotations

import asyncio

import attrs

from mint_envkit import DatasetBuilder, SingleTurnEnv
from mint_envkit.rendering import renderer as renderer_module
from mint_envkit.rl.sampling import preload_renderers

MODEL = "mint-envkit/tiny-qwen3-small"


class EchoEnv(SingleTurnEnv):
    def score(self, message):
        return 0.0


def _datasets(renderer_name: str = "qwen3_disable_thinking"):
    builder = DatasetBuilder(
        env=EchoEnv,
        problems=[{"question": f"q{i}", "answer": str(i)} for i in range(6)],
        batch_size=2,
        group_size=2,
        model_name=MODEL,
        renderer_name=renderer_name,
        test_fraction=0.5,
        seed=0,
    )
    return asyncio.run(builder())


def test_preload_builds_the_shared_renderer_the_groups_then_use(monkeypatch):
    monkeypatch.setattr(renderer_module, "_SHARED", {})
    train, test = _datasets()
    assert preload_renderers(train, test) == 1  # one renderer for every group of both splits
    assert list(renderer_module._SHARED) == [("qwen3_disable_thinking", MODEL)]
    built = renderer_module._SHARED[("qwen3_disable_thinking", MODEL)]
    assert train.get_batch(0)[0].renderer() is built
    assert test.get_batch(0)[0].renderer() is built


def test_preload_skips_missing_empty_and_renderer_less_data():
    @attrs.frozen
    class CookbookStyleGroup:  # a group builder of another library: no renderer()
        problem: dict

    class Data:
        def __len__(self):
            return 1

        def get_batch(self, index):
            return [CookbookStyleGroup({"question": "q"})]

    class Empty:
        def __len__(self):
            return 0

        def get_batch(self, index):
            raise AssertionError("an empty dataset has no batch to read")

    assert preload_renderers(None, Empty(), Data()) == 0


def test_a_failing_renderer_is_left_to_the_first_rollout(monkeypatch, caplog):
    monkeypatch.setattr(renderer_module, "_SHARED", {})
    train, _ = _datasets()

    class Broken:  # a group whose tokenizer cannot be loaded
        def renderer(self):
            raise RuntimeError("tokenizer directory /models/missing holds no tokenizer")

    class Data:
        def __len__(self):
            return 1

        def get_batch(self, index):
            return [Broken()]

    with caplog.at_level("DEBUG", logger="mint_envkit.rl.sampling"):
        assert preload_renderers(Data(), train) == 1  # the good dataset is still preloaded
    assert "/models/missing holds no tokenizer" in caplog.text
