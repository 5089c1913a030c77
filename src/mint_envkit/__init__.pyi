"""The typed face of mint_envkit: what type checkers see (the package loads these names lazily).

Written from ``_FACE`` in ``__init__.py``; ``tests/test_public_api.py`` checks that the two agree.
"""

from mint_envkit.auditing import (
    AuditReport as AuditReport,
)
from mint_envkit.auditing import (
    audit as audit,
)
from mint_envkit.builders import (
    DatasetBuilder as DatasetBuilder,
)
from mint_envkit.builders import (
    GroupBuilder as GroupBuilder,
)
from mint_envkit.builders import (
    ProblemDataset as ProblemDataset,
)
from mint_envkit.builders import (
    load_environment as load_environment,
)
from mint_envkit.builders import (
    problems_from as problems_from,
)
from mint_envkit.envs import (
    AnswerScore as AnswerScore,
)
from mint_envkit.envs import (
    AuditProbe as AuditProbe,
)
from mint_envkit.envs import (
    Feedback as Feedback,
)
from mint_envkit.envs import (
    Message as Message,
)
from mint_envkit.envs import (
    MessageEnv as MessageEnv,
)
from mint_envkit.envs import (
    MessageStepResult as MessageStepResult,
)
from mint_envkit.envs import (
    MultiTurnEnv as MultiTurnEnv,
)
from mint_envkit.envs import (
    SingleTurnEnv as SingleTurnEnv,
)
from mint_envkit.envs import (
    ToolEnv as ToolEnv,
)
from mint_envkit.envs import (
    with_thinking as with_thinking,
)
from mint_envkit.errors import (
    BackendError as BackendError,
)
from mint_envkit.errors import (
    ConfigError as ConfigError,
)
from mint_envkit.errors import (
    EnvError as EnvError,
)
from mint_envkit.errors import (
    MintEnvkitError as MintEnvkitError,
)
from mint_envkit.errors import (
    MissingExtraError as MissingExtraError,
)
from mint_envkit.errors import (
    ProblemError as ProblemError,
)
from mint_envkit.errors import (
    RendererError as RendererError,
)
from mint_envkit.errors import (
    RewardOrderWarning as RewardOrderWarning,
)
from mint_envkit.errors import (
    SandboxError as SandboxError,
)
from mint_envkit.errors import (
    TokenizerError as TokenizerError,
)
from mint_envkit.errors import (
    ToolDefinitionError as ToolDefinitionError,
)
from mint_envkit.evaluation import (
    EvalResult as EvalResult,
)
from mint_envkit.evaluation import (
    evaluate as evaluate,
)
from mint_envkit.judge import (
    Judge as Judge,
)
from mint_envkit.judge import (
    JudgedEnv as JudgedEnv,
)
from mint_envkit.judge import (
    judged as judged,
)
from mint_envkit.parsers import (
    Parser as Parser,
)
from mint_envkit.parsers import (
    ParseResult as ParseResult,
)
from mint_envkit.parsers import (
    boxed as boxed,
)
from mint_envkit.parsers import (
    choice as choice,
)
from mint_envkit.parsers import (
    exact as exact,
)
from mint_envkit.parsers import (
    first_number as first_number,
)
from mint_envkit.parsers import (
    last_number as last_number,
)
from mint_envkit.parsers import (
    math_answer as math_answer,
)
from mint_envkit.parsers import (
    math_equal as math_equal,
)
from mint_envkit.parsers import (
    same_number as same_number,
)
from mint_envkit.parsers import (
    strip_thinking as strip_thinking,
)
from mint_envkit.parsers import (
    xml_tag as xml_tag,
)
from mint_envkit.rendering import (
    Renderer as Renderer,
)
from mint_envkit.rendering import (
    get_renderer as get_renderer,
)
from mint_envkit.rewards import (
    Reward as Reward,
)
from mint_envkit.rewards import (
    RewardBreakdown as RewardBreakdown,
)
from mint_envkit.rewards import (
    RewardContext as RewardContext,
)
from mint_envkit.rewards import (
    component as component,
)
from mint_envkit.rewards import (
    correct as correct,
)
from mint_envkit.rewards import (
    gated as gated,
)
from mint_envkit.rewards import (
    math_correct as math_correct,
)
from mint_envkit.rewards import (
    valid_format as valid_format,
)
from mint_envkit.rewards import (
    weighted as weighted,
)
from mint_envkit.rl import (
    Config as Config,
)
from mint_envkit.rl import (
    KLReferenceConfig as KLReferenceConfig,
)
from mint_envkit.rl import (
    run_training as run_training,
)
from mint_envkit.rollouts import (
    ScriptedPolicy as ScriptedPolicy,
)
from mint_envkit.rollouts import (
    ScriptedReport as ScriptedReport,
)
from mint_envkit.sandbox import (
    CodeEnv as CodeEnv,
)
from mint_envkit.sandbox import (
    code_passes as code_passes,
)
from mint_envkit.sandbox import (
    run_tests as run_tests,
)
from mint_envkit.tools import (
    McpServer as McpServer,
)
from mint_envkit.tools import (
    Tool as Tool,
)
from mint_envkit.tools import (
    tool as tool,
)
from mint_envkit.view import (
    write_report as write_report,
)

__version__: str
__all__: list[str]
