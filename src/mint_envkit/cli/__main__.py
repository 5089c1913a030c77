"""``python -m mint_envkit.cli ...``: the ``mint-envkit`` command without the console script.

Example (shell)::

    python -m mint_envkit.cli serve --port 0 --model mint-envkit/tiny-qwen3-small
"""

from mint_envkit.cli import console_main

raise SystemExit(console_main())
