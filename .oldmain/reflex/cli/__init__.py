"""The ``aevyra-reflex`` command line and its console and HTML reports.

One module per command (``optimize``, ``check``, ``compare``, ``export``, ``runs``/``show``,
``report``/``audit``), ``common`` for what they share, ``console``/``report_html`` for output.
"""

from reflex.cli.main import build_cli, main

__all__ = ["build_cli", "main"]
