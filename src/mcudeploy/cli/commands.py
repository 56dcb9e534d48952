"""Imports every subcommand module so that each registers itself."""
from . import cmd_analyze  # noqa: F401
from . import cmd_lint  # noqa: F401
from . import cmd_targets  # noqa: F401
from . import cmd_plan  # noqa: F401
from . import cmd_quantize  # noqa: F401
from . import cmd_run  # noqa: F401
from . import cmd_validate  # noqa: F401
from . import cmd_generate  # noqa: F401
