"""The sampling phase's helpers: renderers built before the first step needs them."""

from __future__ import annotations

import asyncio

import attrs

from mint_envkit import DatasetBuilder, SingleTurnEnv
from mint_envkit.rendering.renderer import get_renderer
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


def test_preload_builds_the_shared_renderer_the_groups_then_use():
    train, test = _datasets()
    built = preload_renderers(train, test)  # one renderer for every group of both splits
    assert len(built) == 1 and built[0].name == "qwen3_disable_thinking"
    assert built[0] is get_renderer("qwen3_disable_thinking", MODEL)
    assert train.get_batch(len(train) - 1)[-1].renderer() is built[0]
    assert test.get_batch(0)[0].renderer() is built[0]


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

    assert preload_renderers(None, Empty(), Data()) == []


def test_a_failing_renderer_is_left_to_the_first_rollout(caplog):
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
        built = preload_renderers(Data(), train)
    assert [r.name for r in built] == ["qwen3_disable_thinking"]  # the good one still is
    assert "/models/missing holds no tokenizer" in caplog.text
