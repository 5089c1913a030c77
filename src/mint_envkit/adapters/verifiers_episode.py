"""One episode of a verifiers env, run by verifiers' own code, and its rubric as a reward.

:class:`Episode` keeps a verifiers ``State`` beside one of our envs and moves it with
the env's own methods, in the order of its ``MultiTurnEnv.rollout``: ``init_state`` and
``setup_state`` before the first observation; after each reply, ``add_model_response``
(the reply as a verifiers ``Response``), the stop conditions (``is_completed``) and,
while none fires, ``get_prompt_messages`` (which calls the env's ``env_response``); at
the end the env's cleanup handlers (``render_completion``). Nothing is sampled through
verifiers: our loop samples, and the episode's client refuses to.

:func:`rubric_reward` turns the rubric's functions (a ``RubricGroup`` flattened) into one
:func:`~mint_envkit.rewards.weighted` reward, a part per function with its weight. Each
part calls its function as the rubric does (``Rubric.score_objects``: ``prompt``,
``completion``, ``answer``, ``state``, ``info``, ``task``, the parser and the row's other
fields, those the signature names or all of them for ``**kwargs``), on the episode's
state, which the env hands its reward in :data:`STATE_KEY` of the context's problem.
A function that raises scores 0.0, as in verifiers, and the part reports it
(``verifiers/<part>/error``, the error in the logs).

Example::

    # not run: needs the verifiers extra; tests/adapters/test_verifiers.py runs it
    episode = Episode(vf_env, row, "mint-envkit/tiny-qwen3")
    opening = await episode.start()               # our messages
    follow = await episode.reply({"role": "assistant", "content": "<answer>5</answer>"})
    follow is None                                # True: a single-turn env stops here
"""

from __future__ import annotations

import inspect
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mint_envkit.adapters.extras import require
from mint_envkit.envs.base import Message
from mint_envkit.errors import ConfigError, EnvError, MissingExtraError
from mint_envkit.parsers import ParseResult
from mint_envkit.rewards import PartScore, Reward, RewardContext, weighted

INSTALL = "pip install 'mint-envkit[verifiers]' (or: pip install verifiers==0.3.1)"
"""The command that installs what the verifiers adapter needs.

Example::

    "verifiers" in INSTALL   # True
"""

STATE_KEY = "verifiers_state"
"""The key of the context's problem under which an env hands its reward the episode's state.

Example::

    STATE_KEY   # 'verifiers_state'
"""

_NAME = re.compile(r"[^A-Za-z0-9_.\-]+")


def import_verifiers() -> Any:
    """``verifiers`` (its classic stack, ``import verifiers as vf``), or MissingExtraError.

    Example::

        import_verifiers().Rubric   # <class 'verifiers.legacy.rubrics.rubric.Rubric'>
    """
    verifiers = require("verifiers", extra="verifiers", purpose="verifiers envs (from_verifiers)")
    if not hasattr(verifiers, "Environment"):
        version = getattr(verifiers, "__version__", "?")
        raise MissingExtraError(
            f"verifiers {version} has no classic envs (vf.Environment, Rubric, Parser; 0.4.0 "
            f"keeps only its v1 Taskset x Harness stack); run {INSTALL}"
        )
    return verifiers


def _text(content: Any, where: str) -> str:
    """A message's content as text: a string, or the text parts of a list of parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = []
        for part in content:
            kind = part.get("type") if isinstance(part, Mapping) else getattr(part, "type", None)
            text = part.get("text") if isinstance(part, Mapping) else getattr(part, "text", None)
            if kind != "text" or not isinstance(text, str):
                raise ConfigError(
                    f"{where} holds a {kind!r} content part; mint_envkit envs are text only "
                    "(drop the image/audio rows, or give the prompt as text)"
                )
            texts.append(text)
        return " ".join(texts).strip()
    raise ConfigError(f"{where} has content {content!r}; expected a string or text parts")


def _field(message: Any, name: str) -> Any:
    return message.get(name) if isinstance(message, Mapping) else getattr(message, name, None)


def to_ours(messages: Sequence[Any], where: str = "a verifiers message") -> list[Message]:
    """verifiers messages (Pydantic or dicts) as our message dicts (text, tool calls kept).

    Example::

        to_ours([{"role": "user", "content": "2 + 3?", "tool_calls": None}])
        # [{'role': 'user', 'content': '2 + 3?'}]
    """
    out: list[Message] = []
    for message in messages:
        role = _field(message, "role")
        if role not in ("system", "user", "assistant", "tool"):
            raise ConfigError(f"{where} has role {role!r}; chat messages only (no 'text' prompts)")
        ours: Message = {"role": role, "content": _text(_field(message, "content"), where)}
        calls = _field(message, "tool_calls")
        if role == "assistant" and calls:
            ours["tool_calls"] = [
                {
                    "type": "function",
                    "id": _field(call, "id"),
                    "function": {
                        "name": _field(call, "name"),
                        "arguments": _field(call, "arguments"),
                    },
                }
                for call in calls
            ]
        if role == "tool" and _field(message, "tool_call_id") is not None:
            ours["tool_call_id"] = _field(message, "tool_call_id")
        out.append(ours)
    return out


def tool_specs(tool_defs: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """verifiers ``tool_defs`` (``vf.Tool``: name, description, parameters) as chat-template tools.

    Example::

        tool_specs([{"name": "add", "description": "Add.", "parameters": {"type": "object"}}])
        # [{'type': 'function', 'function': {'name': 'add', 'description': 'Add.', ...}}]
    """
    if not tool_defs:
        return None
    return [
        {
            "type": "function",
            "function": {
                "name": _field(tool, "name"),
                "description": _field(tool, "description"),
                "parameters": _field(tool, "parameters"),
            },
        }
        for tool in tool_defs
    ]


def _response(vf: Any, message: Message, model_name: str) -> Any:
    """Our assistant message as the verifiers ``Response`` its client would have returned."""
    from verifiers.legacy.types import Response, ResponseMessage, ToolCall

    content = message.get("content")
    content = content if isinstance(content, str) else ""
    for raw in message.get("unparsed_tool_calls") or []:  # calls not read stay text
        content += str(raw.get("raw_text", "")) if isinstance(raw, Mapping) else ""
    calls = [
        ToolCall(
            id=str(c.get("id")), name=c["function"]["name"], arguments=c["function"]["arguments"]
        )
        for c in message.get("tool_calls") or []
    ]
    truncated = bool(message.get("truncated"))
    reply = ResponseMessage(
        content=content,
        reasoning_content=message.get("thinking"),
        tool_calls=calls or None,
        finish_reason="length" if truncated else ("tool_calls" if calls else "stop"),
        is_truncated=truncated,
    )
    return Response(id="mint-envkit", created=int(time.time()), model=model_name, message=reply)


def _no_sampling_client(vf: Any) -> Any:
    from verifiers.legacy.clients.client import Client

    class NoSampling(Client):
        """The episode's client: mint_envkit samples, verifiers never does."""

        def __init__(self) -> None:
            super().__init__(None)

        def setup_client(self, config: Any) -> None:
            return None

        async def to_native_tool(self, tool: Any) -> Any:
            return tool

        async def to_native_prompt(self, messages: Any) -> tuple[Any, dict]:
            return messages, {}

        async def get_native_response(self, *args: Any, **kwargs: Any) -> Any:
            raise EnvError(
                "a verifiers env asked its client for a reply inside env_response; under "
                "mint_envkit the model's replies come from the training loop, so an env that "
                "samples a model itself (a judge, a simulated user) cannot run here"
            )

        async def raise_from_native_response(self, response: Any) -> None:
            return None

        async def from_native_response(self, response: Any) -> Any:
            return response

        async def close(self) -> None:
            return None

    return NoSampling()


class Episode:
    """One verifiers ``State`` moved by the env's own methods (see the module docstring).

    Example::

        # not run: `vf_env` is a verifiers env and `row` one of its dataset's rows
        episode = Episode(vf_env, row, "mint-envkit/tiny-qwen3")
        opening = await episode.start()
    """

    def __init__(self, vf_env: Any, row: Mapping[str, Any], model_name: str) -> None:
        self.vf = import_verifiers()
        self.env = vf_env
        self.row = dict(row)
        self.model_name = model_name
        self.state: Any = None
        self._prompt: list[Any] = []
        self._rendered = False
        self._closed = False

    async def start(self) -> list[Message]:
        """``init_state`` and ``setup_state``, then the opening conversation, as ours."""
        env, vf = self.env, self.vf
        self.state = await env.init_state(self.row, _no_sampling_client(vf), self.model_name)
        timing = self.state["timing"]
        timing.generation.start = timing.setup.start = time.time()
        try:
            setup = await env.setup_state(self.state)
            if setup is not None:
                self.state = setup
        except vf.Error as err:
            self.state["error"] = err
        finally:
            timing.setup.end = time.time()
        self._prompt = await self._prompt_messages()
        return to_ours(self._prompt, "the verifiers env's prompt")

    async def _prompt_messages(self) -> list[Any]:
        from verifiers.legacy.utils.message_utils import maybe_normalize_messages

        messages = await self.env.get_prompt_messages(self.state)
        return list(maybe_normalize_messages(messages, field_name="prompt_messages"))

    def tool_specs(self) -> list[dict[str, Any]] | None:
        """The episode's tools (the row's ``info["tool_defs"]`` or the env's) for the template."""
        return tool_specs(None if self.state is None else self.state.get("tool_defs"))

    async def reply(self, message: Message) -> list[Message] | None:
        """Record the model's reply; the env's next messages (ours), or None when it stops."""
        env, vf, state = self.env, self.vf, self.state
        if state is None:
            raise EnvError("Episode.reply was called before start()")
        response = _response(vf, message, self.model_name)
        await env.add_model_response(state, self._prompt, response)
        if await env.is_completed(state):
            return None
        seen = len(self._prompt) + len(state["trajectory"][-1]["completion"])
        try:
            prompt = await self._prompt_messages()
        except vf.OverlongPromptError:
            state["prompt_too_long"] = True
            state["is_truncated"] = True
            prompt = None
        except vf.Error as err:
            state["error"] = err
            prompt = None
        if prompt is None or await env.is_completed(state):
            return None
        before = to_ours([*self._prompt, *state["trajectory"][-1]["completion"]])
        if to_ours(prompt[:seen]) != before:
            raise EnvError(
                f"verifiers env {type(env).__name__}.get_prompt_messages rewrote the earlier "
                "conversation; mint_envkit trains token-faithful episodes, where each turn "
                "extends the last, so such an env cannot run here"
            )
        self._prompt = prompt
        return to_ours(prompt[seen:], "the verifiers env's env_response")

    async def render(self) -> None:
        """Run the env's cleanup handlers once (``render_completion``: ``state["completion"]``)."""
        if not self._rendered and self.state is not None:
            self._rendered = True
            await self.env.cleanup(self.state)

    async def close(self) -> None:
        """After scoring: the rubric's cleanup handlers, once (the env's, if not run yet)."""
        if self._closed or self.state is None:
            return
        self._closed = True
        await self.render()
        await self.env.rubric.cleanup(self.state)


def _flatten(rubric: Any) -> list[tuple[Any, Any, float]]:
    """``(owning rubric, function, weight)`` for every function of a (nested) RubricGroup."""
    inner = getattr(rubric, "rubrics", None)
    if inner is not None:
        return [part for sub in inner for part in _flatten(sub)]
    return list(zip([rubric] * len(rubric.funcs), rubric.funcs, rubric.weights, strict=True))


def rubric_parts(rubric: Any) -> list[tuple[str, Any, Any, float]]:
    """``(part name, owning rubric, function, weight)`` per rubric function, names unique.

    A group reward function (``states``, ``completions``... parameters) has no per-episode
    score: it is a ConfigError naming it.

    Example::

        # not run: `vf_env` is a verifiers env
        [(name, weight) for name, _, _, weight in rubric_parts(vf_env.rubric)]
        # [('correct_answer', 1.0), ('format_reward_func', 0.2), ('num_turns', 0.0)]
    """
    out: list[tuple[str, Any, Any, float]] = []
    seen: set[str] = {"rubric"}  # the whole reward's name
    for owner, func, weight in _flatten(rubric):
        name = getattr(func, "__name__", type(func).__name__)
        if owner._is_group_func(func):
            raise ConfigError(
                f"the rubric function {name!r} scores a whole group (it takes states, "
                "completions, ... or returns a list); mint_envkit scores each episode on its "
                "own, so a group reward cannot be adapted: make it a per-rollout function"
            )
        label = _NAME.sub("_", name).strip("_") or "reward"
        base, n = label, 2
        while label in seen:
            label, n = f"{base}_{n}", n + 1
        seen.add(label)
        out.append((label, owner, func, float(weight)))
    return out


async def call_function(owner: Any, func: Any, state: Any) -> tuple[float, str | None]:
    """The function's score on ``state`` as the rubric calls it; ``(0.0, error)`` if it raises.

    Example::

        # not run: `rubric`, `func` and `episode` come from a verifiers env
        value, error = await call_function(rubric, func, episode.state)
    """
    objects = owner.score_objects(state)
    parameters = inspect.signature(func).parameters.values()
    if not any(p.kind == p.VAR_KEYWORD for p in parameters):
        names = {p.name for p in parameters}
        objects = {k: v for k, v in objects.items() if k in names}
    try:
        value = func(**objects)
        if inspect.isawaitable(value):
            value = await value
        return float(value), None
    except Exception as err:  # verifiers scores a failing function 0.0
        return 0.0, f"{type(err).__name__}: {err}"


def _parse(parser: Any, completion: Any) -> ParseResult:
    value = parser.parse_answer(completion) if parser is not None else None
    if value is None:
        return ParseResult.fail("no_match")
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return ParseResult.ok(text) if text.strip() else ParseResult.fail("empty")


def _part(
    name: str,
    owner: Any,
    func: Any,
    weight: float,
    bounds: tuple[float, float] | None,
    checks_answer: bool,
) -> Reward:
    async def score(completion: str, answer: Any, context: RewardContext) -> PartScore:
        state = context.problem.get(STATE_KEY)
        if state is None:
            raise EnvError(
                f"the verifiers rubric function {name!r} was scored without its episode's "
                "state; score replies through the env (ScriptedPolicy, evaluate, training), "
                "not by calling its reward"
            )
        value, error = await call_function(owner, func, state)
        if not math.isfinite(value):
            raise ConfigError(f"the verifiers rubric function {name!r} returned {value!r}")
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            raise ConfigError(
                f"the verifiers rubric function {name!r} returned {value!r}, outside the "
                f"bounds {bounds} given for it; give bounds that hold, or none"
            )
        parse = _parse(owner.parser, state.get("completion")) if checks_answer else None
        logs = {} if error is None else {"verifiers/error": error}
        return PartScore(value, parse, {"verifiers/error": float(error is not None)}, logs)

    # a metric (weight 0) adds nothing to the total, whatever it returns
    reach = bounds if bounds is not None or weight != 0 else (0.0, 0.0)
    return Reward(name=name, leaf=score, checks_answer=checks_answer, bounds=reach)


def answer_check_name(parts: Sequence[tuple[str, Any, Any, float]], choice: Any) -> str | None:
    """Which part checks the answer: ``choice`` (a function's name, or None for none), or
    for ``"auto"`` the one function of positive weight that names ``answer`` as a parameter.

    Example::

        # not run: `parts` from rubric_parts(vf_env.rubric)
        answer_check_name(parts, "auto")   # 'correct_answer'
    """
    names = [name for name, *_ in parts]
    if choice is None:
        return None
    if choice != "auto":
        if choice not in names:
            raise ConfigError(
                f"answer_check={choice!r} names no rubric function; the rubric has "
                f"{', '.join(names)} (or pass answer_check=None when none checks the answer)"
            )
        return choice
    found = [
        name
        for name, _, func, weight in parts
        if weight > 0 and "answer" in inspect.signature(func).parameters
    ]
    return found[0] if len(found) == 1 else None


def rubric_reward(
    parts: Sequence[tuple[str, Any, Any, float]],
    answer_check: str | None,
    bounds: Mapping[str, tuple[float, float]],
) -> Reward:
    """The rubric as one weighted reward: a part per function, ``answer_check`` the answer check.

    Each part reads the episode's state from :data:`STATE_KEY` of the context's problem.
    A function of weight 0 (a metric, such as ``num_turns``) needs no bounds: whatever it
    returns adds nothing to the total.

    Example::

        # not run: `parts` from rubric_parts(vf_env.rubric)
        reward = rubric_reward(parts, "correct_answer", {})
    """
    unknown = sorted(set(bounds) - {name for name, *_ in parts})
    if unknown:
        raise ConfigError(
            f"bounds name {', '.join(map(repr, unknown))}, not rubric functions; the rubric "
            f"has {', '.join(name for name, *_ in parts)}"
        )
    pieces = {
        name: (
            _part(name, owner, func, weight, bounds.get(name), name == answer_check),
            weight,
        )
        for name, owner, func, weight in parts
    }
    return weighted(**pieces).named("rubric")
