"""Problem fields: how an env declares the fields of the problem it holds.

An env is built from one problem, a dict such as
``{"question": "What is 2 + 3?", "answer": "5"}``. The env class lists the
fields it needs (``required_fields``) and the ones it can take
(``optional_fields``, with defaults); :func:`bind_problem` checks a problem
against them and names what is missing or unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mint_envkit.errors import ProblemError


def bind_problem(
    env_name: str,
    required: tuple[str, ...],
    optional: Mapping[str, Any],
    problem: Mapping[str, Any],
) -> dict[str, Any]:
    """Check ``problem`` against an env's fields; return the full field dict.

    Raises:
        ProblemError: a required field is missing or an unknown field is given.

    Example::

        bind_problem("ArithmeticEnv", ("question", "answer"), {}, {"question": "1+1?", "answer": 2})
    """
    missing = [name for name in required if name not in problem]
    if missing:
        raise ProblemError(
            f"{env_name} needs field(s) {', '.join(map(repr, missing))}; the problem has "
            f"{sorted(problem)}. Add the field to every problem, or give it a default in "
            f"{env_name}.optional_fields."
        )
    known = set(required) | set(optional)
    unknown = [name for name in problem if name not in known]
    if unknown:
        raise ProblemError(
            f"{env_name} got unknown field(s) {', '.join(map(repr, unknown))}; it takes "
            f"{sorted(known)}. Declare extra fields in {env_name}.optional_fields "
            "(a dict of defaults), or drop them from the problem."
        )
    fields = {name: default for name, default in optional.items()}
    fields.update(problem)
    return fields
